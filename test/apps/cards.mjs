// Renders openadapt-agent's MCP Apps cards in headless Chromium, through a
// host page written here, bridged to a real `openadapt-agent serve` over
// stdio (docs/mcp.md "MCP Apps"). The page's iframe holds the card exactly
// as resources/read returned it; the host answers ui/initialize, sends the
// tool input and result, and forwards the card's tools/call to the server
// through a function exposed over the DevTools protocol (test only).
//
// Usage: node cards.mjs <config.json>   (written by .ci/checks/70-apps-browser.sh)
import { spawn } from "node:child_process";
import { readFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const cfg = JSON.parse(readFileSync(process.argv[2], "utf8"));
const MIME = "text/html;profile=mcp-app";
let failures = 0;
const fail = (msg) => { failures++; console.error("FAIL: " + msg); };
const ok = (cond, msg) => { if (!cond) fail(msg); };

// A minimal MCP client over the server's stdio that advertises the Apps
// extension and form elicitation, and accepts every confirmation form.
class Server {
  constructor(args, env) {
    this.proc = spawn(cfg.bin, ["serve", ...args], { env: { ...cfg.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
    this.stderr = "";
    this.proc.stderr.on("data", (d) => { this.stderr += d; });
    this.next = 1;
    this.pending = new Map();
    this.elicitations = [];
    this.calls = [];
    createInterface({ input: this.proc.stdout }).on("line", (line) => this.onLine(line));
  }
  onLine(line) {
    const m = JSON.parse(line);
    if (m.method === "elicitation/create") {
      this.elicitations.push(m.params);
      this.write({ jsonrpc: "2.0", id: m.id, result: { action: "accept", content: { confirmed: true } } });
      return;
    }
    if (m.method !== undefined) {
      if (m.id !== undefined) this.write({ jsonrpc: "2.0", id: m.id, result: {} });
      return;
    }
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (m.error) p.reject(Object.assign(new Error(m.error.message), { rpc: m.error }));
    else p.resolve(m.result);
  }
  write(msg) { this.proc.stdin.write(JSON.stringify(msg) + "\n"); }
  request(method, params) {
    const id = this.next++;
    if (method === "tools/call") this.calls.push(params);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.write({ jsonrpc: "2.0", id, method, params });
    });
  }
  async init() {
    await this.request("initialize", {
      protocolVersion: "2025-11-25",
      capabilities: { elicitation: { form: {} }, extensions: { "io.modelcontextprotocol/ui": { mimeTypes: [MIME] } } },
      clientInfo: { name: "apps-browser-test", version: "1" },
    });
    this.write({ jsonrpc: "2.0", method: "notifications/initialized" });
    this.tools = (await this.request("tools/list", {})).tools;
    return this;
  }
  async card(toolName) {
    const tool = this.tools.find((t) => t.name === toolName);
    const uri = tool && tool._meta && tool._meta.ui && tool._meta.ui.resourceUri;
    if (!uri) throw new Error(`${toolName}: no card link`);
    const r = await this.request("resources/read", { uri });
    const c = r.contents[0];
    if (c.mimeType !== MIME) throw new Error(`${uri}: mime ${c.mimeType}`);
    return c.text;
  }
  close() { this.proc.stdin.end(); return new Promise((r) => this.proc.once("exit", r)); }
}

// The host page: one sandboxed iframe (scripts only, an opaque origin) and
// the host side of the bridge.
const HOST = `<!DOCTYPE html><html><head><meta charset="utf-8"><title>test host</title></head>
<body style="margin:0;background:#888">
<iframe id="view" sandbox="allow-scripts" style="border:0;display:block;width:100%;height:200px;background:transparent"></iframe>
<script>
window.host = { calls: [], drop: 0, initialized: false, sizes: 0 };
let state = {};
window.host.show = (html, input, result, theme) => {
  state = { input, result, theme };
  window.host.initialized = false;
  document.getElementById("view").srcdoc = html;
};
window.addEventListener("message", async (ev) => {
  const f = document.getElementById("view");
  if (ev.source !== f.contentWindow) return;
  const m = ev.data;
  const post = (msg) => f.contentWindow.postMessage(msg, "*");
  const reply = (id, result) => post({ jsonrpc: "2.0", id, result });
  const error = (id, code, message) => post({ jsonrpc: "2.0", id, error: { code, message } });
  switch (m && m.method) {
  case "ui/initialize":
    reply(m.id, { protocolVersion: "2026-01-26", hostInfo: { name: "test-host", version: "1" },
      hostCapabilities: { serverTools: {} }, hostContext: { theme: state.theme, displayMode: "inline" } });
    break;
  case "ui/notifications/initialized":
    window.host.initialized = true;
    post({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: state.input } });
    post({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: state.result });
    break;
  case "ui/notifications/size-changed":
    window.host.sizes++;
    if (m.params && m.params.height > 0) f.style.height = m.params.height + "px";
    break;
  case "tools/call": {
    window.host.calls.push(m.params);
    let res;
    try { res = JSON.parse(await window.mcpToolsCall(JSON.stringify(m.params))); }
    catch (e) { error(m.id, -32603, "the server did not answer"); break; }
    if (window.host.drop > 0) { window.host.drop--; error(m.id, -32001, "the answer was lost on the way"); break; }
    if (res.error) { error(m.id, res.error.code, res.error.message); break; }
    reply(m.id, res.result);
    break;
  }
  default:
    if (m && m.id !== undefined && m.method) error(m.id, -32601, "not supported");
  }
});
</script></body></html>`;

const browser = await chromium.launch({
  executablePath: cfg.chromium,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
mkdirSync(cfg.shots, { recursive: true });

// open renders a card for a tool result in a fresh page and returns the
// page, its card frame and the console errors (a CSP violation is one).
async function open(server, html, input, result, { theme, width = 480, scheme = "light" } = {}) {
  const context = await browser.newContext({ viewport: { width, height: 700 }, colorScheme: scheme, offline: true });
  const page = await context.newPage();
  const problems = [];
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(m.text()); });
  page.on("pageerror", (e) => problems.push(String(e)));
  page.on("request", (r) => { if (!r.url().startsWith("about:") && !r.url().startsWith("data:")) problems.push("network request " + r.url()); });
  await page.exposeFunction("mcpToolsCall", async (params) => {
    try { return JSON.stringify({ result: await server.request("tools/call", JSON.parse(params)) }); }
    catch (e) { if (e.rpc) return JSON.stringify({ error: e.rpc }); throw e; }
  });
  await page.setContent(HOST);
  await page.evaluate(([h, i, r, t]) => window.host.show(h, i, r, t), [html, input, result, theme]);
  await page.waitForFunction(() => window.host.initialized);
  const frame = page.frames().find((f) => f !== page.mainFrame());
  await frame.waitForFunction(() => !document.getElementById("card").innerText.includes("Waiting for the result"));
  return { context, page, frame, problems };
}

const text = (frame) => frame.evaluate(() => document.getElementById("card").innerText);
const dom = (frame) => frame.evaluate(() => document.documentElement.outerHTML);

function noSecrets(label, html, secrets) {
  for (const s of secrets) ok(!html.includes(s), `${label}: the card's DOM holds a planted secret (${s.slice(0, 12)}…)`);
}

async function shot(page, name) {
  const el = await page.$("#view");
  await el.screenshot({ path: join(cfg.shots, name) });
}

// 1. Run card states through run tool calls on fake Flow.
for (const st of cfg.runStates) {
  const server = await new Server(st.args, st.env).init();
  try {
    const tool = server.tools.find((t) => t.name === cfg.runTool);
    const args = { note: cfg.argSecret };
    const result = await server.request("tools/call", { name: tool.name, arguments: args });
    const sc = result.structuredContent;
    const html = await server.card(tool.name);
    const { context, page, frame, problems } = await open(server, html, args, result, st.view);
    if (st.final) {
      ok(sc.status === "running", `run ${st.name}: the call answered ${sc.status}, not running`);
      await frame.waitForFunction((want) => { const b = document.querySelector("#card .badge"); return b && b.textContent === want; }, st.final, { timeout: 20000 });
    }
    const t = await text(frame);
    const shown = st.final || sc.status || (sc.error && sc.error.code);
    ok(t.includes(shown), `run ${st.name}: status ${shown} not shown: ${t}`);
    if (!st.final) {
      for (const k of ["record_changed", "next_step", "proof"]) {
        if (sc[k] !== undefined) ok(t.includes(String(sc[k]).replace(/_/g, " ")), `run ${st.name}: ${k}=${sc[k]} not shown`);
      }
      ok(t.includes(sc.safe_to_retry ? "yes" : "no"), `run ${st.name}: safe_to_retry not shown`);
      if (sc.needs_attention) ok(t.includes(sc.needs_attention.category.replace(/_/g, " ")), `run ${st.name}: attention category not shown`);
    }
    if (st.final) ok(server.calls.some((c) => c.name === "get_run_report" && c.arguments.wait_ms > 0), `run ${st.name}: no live long-poll`);
    noSecrets(`run ${st.name}`, await dom(frame), cfg.secrets);
    ok(problems.length === 0, `run ${st.name}: console errors: ${problems.join(" | ")}`);
    if (st.shot) await shot(page, st.shot);
    await context.close();
    console.log(`ok: run card, ${st.name}: ${t.split("\n").slice(0, 2).join(" ")}`);
  } finally {
    await server.close();
  }
}

// 2. The attention card and an app-only decision from its button.
{
  const server = await new Server(cfg.attention.args, cfg.attention.env).init();
  try {
    const names = server.tools.map((t) => t.name);
    const q = await server.request("tools/call", { name: "list_needs_attention", arguments: {} });
    const id = q.structuredContent.items[0].id;
    const args = { attention_id: id };
    const item = await server.request("tools/call", { name: "get_attention_item", arguments: args });
    const html = await server.card("get_attention_item");
    for (const scheme of ["light", "dark"]) {
      const { context, page, frame, problems } = await open(server, html, args, item, { scheme, width: scheme === "dark" ? 320 : 480 });
      const t = await text(frame);
      const cap = item.structuredContent.capability;
      ok(t.includes(cap.digest.slice(0, 19)) && !t.includes(cap.digest), `attention: digest prefix (${scheme})`);
      ok(t.includes(cap.expires_at), `attention: expiry (${scheme})`);
      for (const a of cap.allowed_actions) ok(a === "reconcile" || t.toLowerCase().includes(a), `attention: action ${a} (${scheme})`);
      noSecrets("attention", await dom(frame), cfg.attention.secrets);
      ok(problems.length === 0, `attention: console errors: ${problems.join(" | ")}`);
      await shot(page, `apps-attention-${scheme}.png`);
      await context.close();
    }
    ok(names.includes("app_escalate_attention") && names.includes("escalate_attention"), "attention: tools " + names.join(","));

    // A click on Escalate: exactly one tools/call of the app-only tool, one
    // confirmation form, and the decision.
    const { context, page, frame, problems } = await open(server, html, args, item);
    const before = { calls: server.calls.length, forms: server.elicitations.length };
    await frame.getByRole("button", { name: "Escalate" }).click();
    await frame.waitForFunction(() => document.getElementById("card").innerText.includes("escalated"));
    const calls = server.calls.slice(before.calls);
    ok(calls.length === 1 && calls[0].name === "app_escalate_attention", `escalate: tools/calls ${JSON.stringify(calls.map((c) => c.name))}`);
    ok(server.elicitations.length === before.forms + 1, "escalate: one confirmation form");
    const a1 = calls[0].arguments;
    ok(a1.attention_id === id && a1.capability_digest === item.structuredContent.capability.digest && a1.request_assistance === true && /^card-[0-9a-f]{24}$/.test(a1.idempotency_key), "escalate: arguments " + JSON.stringify(a1));
    const t1 = await text(frame);
    const d1 = /Decision ([0-9a-f]{32})/.exec(t1);
    ok(d1, "escalate: decision id shown");
    await shot(page, "apps-attention-decided.png");
    noSecrets("attention decided", await dom(frame), cfg.attention.secrets);

    // The answer is lost once: the card offers Retry, which sends the same
    // key, and the server replays the decision it made.
    const mark = server.calls.length;
    await page.evaluate(() => { window.host.drop = 1; });
    await frame.getByRole("button", { name: "Escalate" }).click();
    await frame.getByRole("button", { name: "Retry Escalate" }).waitFor();
    await frame.getByRole("button", { name: "Retry Escalate" }).click();
    await frame.waitForFunction(() => document.getElementById("card").innerText.includes("escalated"));
    const retry = server.calls.slice(mark);
    ok(retry.length === 2 && retry.every((c) => c.name === "app_escalate_attention"), `retry: ${retry.length} calls`);
    ok(retry.length === 2 && retry[0].arguments.idempotency_key === retry[1].arguments.idempotency_key && retry[0].arguments.idempotency_key !== a1.idempotency_key, "retry: the same new key twice");
    let host = await page.evaluate(() => window.host.calls.length);
    ok(host === 3, `host forwarded ${host} tools/calls`);
    const d2 = /Decision ([0-9a-f]{32})/.exec(await text(frame));
    ok(d2 && d1 && d2[1] !== d1[1], "retry: a second decision for a new click");
    // The replay: the lost call and its retry carry one decision.
    const r = await server.request("tools/call", { name: "app_escalate_attention", arguments: retry[0].arguments });
    ok(d2 && r.structuredContent.decision_id === d2[1], "retry: the same key replays the same decision");
    // Continue needs the live session, which this server has not: the
    // server answers unknown tool and the card says so, deciding nothing.
    const acts = server.calls.length;
    await frame.getByRole("button", { name: "Continue" }).click();
    await frame.waitForFunction(() => document.getElementById("card").innerText.includes("does not offer Continue"));
    ok(server.calls.length === acts + 1 && server.calls.at(-1).name === "app_continue_attention", "continue: one call");
    host = await page.evaluate(() => window.host.calls.length);
    ok(host === 4, `host forwarded ${host} tools/calls`);
    ok(problems.length === 0, `decision: console errors: ${problems.join(" | ")}`);
    await context.close();
    console.log(`ok: attention card: escalate decided (${d1 && d1[1]}), retry replayed (${d2 && d2[1]})`);
  } finally {
    await server.close();
  }
}

// 3. The sandbox (serve with no flags): every case's run card, and a
// decision from the halt's attention card.
if (cfg.sandbox) {
  const server = await new Server(cfg.sandbox.args, cfg.sandbox.env).init();
  try {
    const list = await server.request("tools/call", { name: "list_workflows", arguments: {} });
    const ids = Object.fromEntries(list.structuredContent.workflows.map((w) => [w.name, w.id]));
    for (const c of cfg.sandbox.cases) {
      const tool = "run_" + ids["sandbox_" + c.name];
      const result = await server.request("tools/call", { name: tool, arguments: c.args });
      const sc = result.structuredContent;
      const html = await server.card(tool);
      const { context, page, frame, problems } = await open(server, html, c.args, result, c.view);
      if (c.final) {
        ok(sc.status === "running", `sandbox ${c.name}: the call answered ${sc.status}, not running`);
        await frame.waitForFunction((want) => { const b = document.querySelector("#card .badge"); return b && b.textContent === want; }, c.final, { timeout: 20000 });
        ok(server.calls.some((x) => x.name === "get_run_report" && x.arguments.wait_ms > 0), `sandbox ${c.name}: no live long-poll`);
      }
      // A result that names its workflow is titled with the workflow's
      // display name, asked from get_workflow.
      if (sc.workflow_id) {
        ok(sc.workflow_id === ids["sandbox_" + c.name], `sandbox ${c.name}: the result names another workflow`);
        await frame.waitForFunction((want) => { const h = document.querySelector("#card h1"); return h && h.textContent === want; }, "sandbox_" + c.name, { timeout: 20000 });
        ok(server.calls.some((x) => x.name === "get_workflow" && x.arguments.workflow === sc.workflow_id), `sandbox ${c.name}: the card did not ask for the workflow's name`);
      }
      const t = await text(frame);
      const shown = c.final || sc.status || (sc.error && sc.error.code);
      ok(shown && t.includes(shown), `sandbox ${c.name}: ${shown} not shown: ${t}`);
      ok(t.includes("Sandbox: simulated by this server"), `sandbox ${c.name}: not marked as the sandbox`);
      if (!c.final) {
        for (const k of ["record_changed", "next_step", "proof"]) {
          if (sc[k] !== undefined) ok(t.includes(String(sc[k]).replace(/_/g, " ")), `sandbox ${c.name}: ${k}=${sc[k]} not shown`);
        }
        for (const f of sc.failed_checks || []) ok(t.includes(f.replace(/_/g, " ")), `sandbox ${c.name}: failed check ${f} not shown`);
      }
      noSecrets(`sandbox ${c.name}`, await dom(frame), [cfg.argSecret]);
      ok(problems.length === 0, `sandbox ${c.name}: console errors: ${problems.join(" | ")}`);
      if (c.shot) await shot(page, c.shot);
      await context.close();
      console.log(`ok: sandbox run card, ${c.name}: ${shown}`);
    }
    const q = await server.request("tools/call", { name: "list_needs_attention", arguments: {} });
    const args = { attention_id: q.structuredContent.items[0].id };
    const item = await server.request("tools/call", { name: "get_attention_item", arguments: args });
    const { context, page, frame, problems } = await open(server, await server.card("get_attention_item"), args, item);
    const before = { calls: server.calls.length, forms: server.elicitations.length };
    await frame.getByRole("button", { name: "Escalate" }).click();
    await frame.waitForFunction(() => document.getElementById("card").innerText.includes("escalated"));
    const calls = server.calls.slice(before.calls);
    ok(calls.length === 1 && calls[0].name === "app_escalate_attention", `sandbox escalate: tools/calls ${JSON.stringify(calls.map((x) => x.name))}`);
    ok(server.elicitations.length === before.forms + 1, "sandbox escalate: one confirmation form");
    ok(problems.length === 0, `sandbox attention: console errors: ${problems.join(" | ")}`);
    await shot(page, "apps-sandbox-attention-decided.png");
    await context.close();
    console.log("ok: sandbox attention card: escalate decided");
  } finally {
    await server.close();
  }
}

await browser.close();
if (failures) {
  console.error(`${failures} check(s) failed`);
  process.exit(1);
}
console.log("ok: MCP Apps cards in Chromium");
