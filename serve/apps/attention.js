// The attention card: a Needs Attention item (get_attention_item), the
// queue (list_needs_attention) or an attended decision's result. Each
// allowed action is a button that calls the action's app-only tool through
// the host. A click makes one idempotency key; a retry after no answer
// reuses it, so the server replays the decision instead of making another.
(function () {
  var o = openadapt;
  var main = document.getElementById("card");
  var labels = { "continue": "Continue", skip: "Skip", reject: "Reject", teach: "Teach", escalate: "Escalate" };
  var confirmField = {
    "continue": "human_completed", skip: "confirmed_not_applicable", reject: "confirmed_reject",
    teach: "request_demonstration", escalate: "request_assistance"
  };
  // Codes after which the same request may be retried unchanged.
  var retryable = { delivery_uncertain: true, server_stopping: true, internal_error: true };

  function newKey() {
    var b = new Uint8Array(12);
    crypto.getRandomValues(b);
    var s = "card-";
    for (var i = 0; i < b.length; i++) s += (b[i] < 16 ? "0" : "") + b[i].toString(16);
    return s;
  }

  function decisionView(box, d) {
    o.clear(box);
    var line = o.el("p");
    line.appendChild(o.badge(o.str(d.status)));
    box.appendChild(line);
    box.appendChild(o.el("p", "", o.str(d.message)));
    if (typeof d.decision_id === "string") box.appendChild(o.el("p", "muted", "Decision " + d.decision_id));
  }

  function renderItem(item, actionsEnabled) {
    var sec = o.el("section");
    sec.appendChild(o.el("h1", "", "Needs attention: " + o.str(item.category).replace(/_/g, " ")));
    var line = o.el("p");
    line.appendChild(o.badge(o.str(item.status)));
    sec.appendChild(line);
    sec.appendChild(o.el("p", "", o.str(item.headline)));
    sec.appendChild(o.el("p", "muted", o.str(item.next_action)));
    var c = o.capability(item);
    var dl = o.el("dl");
    if (typeof item.completed_intent_count === "number") o.field(dl, "Steps done", String(item.completed_intent_count));
    o.field(dl, "Allowed actions", o.actionsText(c));
    o.field(dl, "Capability", c ? o.digestPrefix(c.digest) : "");
    o.field(dl, "Expires", c ? o.str(c.expires_at) : "");
    o.field(dl, "Item", o.str(item.id));
    sec.appendChild(dl);
    var box = o.el("div", "outcome");
    box.hidden = true;
    if (c && actionsEnabled && Array.isArray(c.allowed_actions) && typeof c.digest === "string") {
      var row = o.el("div", "actions");
      var buttons = [];
      c.allowed_actions.forEach(function (a) {
        if (!labels.hasOwnProperty(a)) return;
        var key = "";
        var b = o.el("button", a === "reject" ? "secondary" : "", labels[a]);
        b.type = "button";
        b.addEventListener("click", function () {
          if (!key) key = newKey();
          buttons.forEach(function (x) { x.disabled = true; });
          box.hidden = false;
          o.clear(box);
          box.appendChild(o.el("p", "muted", "Waiting for the operator's confirmation…"));
          var args = { attention_id: item.id, capability_digest: c.digest, idempotency_key: key };
          args[confirmField[a]] = true;
          o.callTool("app_" + a + "_attention", args).then(function (r) {
            buttons.forEach(function (x) { x.disabled = false; });
            var sc = r && r.structuredContent;
            if (sc && sc.error && typeof sc.error === "object") {
              o.clear(box);
              o.failure(box, sc);
              if (retryable[sc.error.code]) { b.textContent = "Retry " + labels[a]; return; }
            } else if (sc && typeof sc.status === "string") {
              decisionView(box, sc);
            } else {
              o.clear(box);
              box.appendChild(o.el("p", "", "The host returned no decision."));
            }
            key = "";
            b.textContent = labels[a];
          }, function (err) {
            buttons.forEach(function (x) { x.disabled = false; });
            o.clear(box);
            if (err && err.code === -32602) {
              // The server has no such tool: Continue and Skip need the
              // attended live session.
              box.appendChild(o.el("p", "", "This server does not offer " + labels[a] + "."));
              key = "";
              return;
            }
            box.appendChild(o.el("p", "", "No answer arrived. Retry sends the same request, so nothing is decided twice."));
            b.textContent = "Retry " + labels[a];
          });
        });
        buttons.push(b);
        row.appendChild(b);
      });
      if (buttons.length) sec.appendChild(row);
    }
    sec.appendChild(box);
    return sec;
  }

  function render(sc) {
    o.clear(main);
    if (!sc || typeof sc !== "object") {
      main.appendChild(o.el("p", "muted", "This result has nothing the card can show."));
    } else if (sc.error && typeof sc.error === "object") {
      o.failure(main, sc);
    } else if (Array.isArray(sc.items)) {
      main.appendChild(o.el("p", "", (typeof sc.open_count === "number" ? sc.open_count : sc.items.length) + " open Needs Attention item(s)"));
      sc.items.slice(0, 20).forEach(function (it) {
        if (it && typeof it === "object") main.appendChild(renderItem(it, sc.actions_enabled === true));
      });
    } else if (typeof sc.category === "string") {
      main.appendChild(renderItem(sc, true));
    } else if (typeof sc.action === "string" && typeof sc.status === "string") {
      var box = o.el("div", "outcome");
      decisionView(box, sc);
      main.appendChild(box);
    } else {
      main.appendChild(o.el("p", "muted", "This result has nothing the card can show."));
    }
  }

  o.start("openadapt-agent attention card", function (result) { render(result.structuredContent); });
})();
