"use strict";
// The View side of the MCP Apps bridge (docs/mcp.md "MCP Apps"): JSON-RPC
// 2.0 over postMessage with the host. The card sends ui/initialize, then
// ui/notifications/initialized; it renders the tool result the host sends
// in ui/notifications/tool-result and calls tools through the host with
// tools/call. It ignores ui/notifications/tool-input: tool arguments are
// values, never shown. Every text is set with textContent.
var openadapt = (function () {
  var nextId = 1;
  var pending = {};
  var handlers = { result: function () {} };
  var host = window.parent;

  function post(msg) { host.postMessage(msg, "*"); }

  function request(method, params) {
    var id = nextId++;
    return new Promise(function (resolve, reject) {
      pending[id] = { resolve: resolve, reject: reject };
      post({ jsonrpc: "2.0", id: id, method: method, params: params });
    });
  }

  function notify(method, params) { post({ jsonrpc: "2.0", method: method, params: params }); }

  function applyTheme(ctx) {
    if (ctx && (ctx.theme === "light" || ctx.theme === "dark")) {
      document.documentElement.setAttribute("data-theme", ctx.theme);
    }
  }

  window.addEventListener("message", function (ev) {
    if (ev.source !== host) return;
    var m = ev.data;
    if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") return;
    if (m.method === undefined && (typeof m.id === "number") && pending[m.id]) {
      var p = pending[m.id];
      delete pending[m.id];
      if (m.error !== undefined) p.reject(m.error);
      else p.resolve(m.result);
      return;
    }
    switch (m.method) {
      case "ui/notifications/tool-result":
        handlers.result(m.params || {});
        break;
      case "ui/notifications/host-context-changed":
        applyTheme(m.params);
        break;
      case "ui/resource-teardown":
      case "ping":
        if (m.id !== undefined) post({ jsonrpc: "2.0", id: m.id, result: {} });
        break;
    }
  });

  function start(name, onResult) {
    handlers.result = onResult;
    request("ui/initialize", {
      appCapabilities: { availableDisplayModes: ["inline"] },
      appInfo: { name: name, version: "1" },
      protocolVersion: "2026-01-26"
    }).then(function (r) {
      applyTheme(r && r.hostContext);
      notify("ui/notifications/initialized", {});
    }, function () {});
    if (typeof ResizeObserver === "function") {
      var last = "";
      new ResizeObserver(function () {
        var el = document.documentElement;
        var size = { width: Math.ceil(el.scrollWidth), height: Math.ceil(el.scrollHeight) };
        var key = size.width + "x" + size.height;
        if (key !== last) { last = key; notify("ui/notifications/size-changed", size); }
      }).observe(document.documentElement);
    }
  }

  // callTool calls a server tool through the host; it resolves with the
  // CallToolResult and rejects when the host or the server answered with
  // a JSON-RPC error (or not at all).
  function callTool(name, args) { return request("tools/call", { name: name, arguments: args }); }

  // DOM helpers: text only, never markup.
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function field(dl, label, value) {
    if (value === undefined || value === null || value === "") return;
    dl.appendChild(el("dt", "", label));
    dl.appendChild(el("dd", "", value));
  }
  function yesNo(v) { return v === true ? "yes" : v === false ? "no" : ""; }
  function elapsed(ms) {
    if (typeof ms !== "number" || !isFinite(ms) || ms < 0) return "";
    if (ms < 1000) return Math.round(ms) + " ms";
    var s = ms / 1000;
    if (s < 60) return s.toFixed(1) + " s";
    var m = Math.floor(s / 60);
    return m + " min " + Math.round(s - m * 60) + " s";
  }
  function str(v) { return typeof v === "string" ? v : ""; }
  function badge(status) {
    var b = el("span", "badge", status);
    if (/^[a-z_]+$/.test(status)) b.className += " s-" + status;
    return b;
  }
  function clear(main) { while (main.firstChild) main.removeChild(main.firstChild); }
  // The item's capability, if it has a well-formed one.
  function capability(item) {
    var c = item && item.capability;
    return c && typeof c === "object" ? c : null;
  }
  function digestPrefix(d) { return typeof d === "string" ? d.slice(0, 19) + "…" : ""; }
  function actionsText(c) {
    return c && Array.isArray(c.allowed_actions) ? c.allowed_actions.filter(function (a) { return typeof a === "string"; }).join(", ") : "";
  }
  // An error envelope's fixed code, message and recovery.
  function failure(main, sc) {
    var e = sc.error;
    var h = el("p");
    h.appendChild(badge("error"));
    h.appendChild(document.createTextNode(" "));
    h.appendChild(el("code", "", str(e.code)));
    main.appendChild(h);
    main.appendChild(el("p", "", str(e.message)));
    main.appendChild(el("p", "muted", str(e.recovery)));
  }

  return {
    start: start, callTool: callTool, el: el, field: field, yesNo: yesNo, elapsed: elapsed, str: str,
    badge: badge, clear: clear, capability: capability, digestPrefix: digestPrefix, actionsText: actionsText,
    failure: failure
  };
})();
