// The run card: a run result or run report's structuredContent.
(function () {
  var o = openadapt;
  var main = document.getElementById("card");
  var polling = "";

  function render(sc) {
    o.clear(main);
    if (!sc || typeof sc !== "object") {
      main.appendChild(o.el("p", "muted", "This result has nothing the card can show."));
      return;
    }
    var title = o.el("h1", "", sc.workflow_id ? "Workflow " + o.str(sc.workflow_id) : "Run");
    main.appendChild(title);
    if (typeof sc.workflow_id === "string" && sc.workflow_id) name(sc.workflow_id, title);
    if (sc.error && typeof sc.error === "object") {
      o.failure(main, sc);
    } else {
      var line = o.el("p");
      line.appendChild(o.badge(o.str(sc.status)));
      main.appendChild(line);
      main.appendChild(o.el("p", "", o.str(sc.message)));
    }
    if (sc.sandbox === true) {
      main.appendChild(o.el("p", "muted", "Sandbox: simulated by this server; nothing ran."));
    }
    var dl = o.el("dl");
    o.field(dl, "Record changed", o.str(sc.record_changed));
    o.field(dl, "Safe to retry", o.yesNo(sc.safe_to_retry));
    o.field(dl, "Next step", o.str(sc.next_step).replace(/_/g, " "));
    o.field(dl, "Proof", o.str(sc.proof));
    if (Array.isArray(sc.failed_checks)) {
      o.field(dl, "Failed checks", sc.failed_checks.filter(function (c) { return typeof c === "string"; }).join(", ").replace(/_/g, " "));
    }
    var s = sc.summary && typeof sc.summary === "object" ? sc.summary : {};
    if (typeof s.steps_total === "number") {
      var steps = (typeof s.steps_ok === "number" ? s.steps_ok : 0) + " of " + s.steps_total + " verified";
      if (typeof s.steps_skipped === "number" && s.steps_skipped > 0) steps += ", " + s.steps_skipped + " skipped";
      o.field(dl, "Steps", steps);
    }
    o.field(dl, "Elapsed", o.elapsed(s.total_ms));
    o.field(dl, "Run", o.str(sc.run_id));
    main.appendChild(dl);

    var item = sc.needs_attention;
    if (item && typeof item === "object") {
      var sec = o.el("section");
      sec.appendChild(o.el("h2", "", "Needs attention"));
      var c = o.capability(item);
      var adl = o.el("dl");
      o.field(adl, "Category", o.str(item.category).replace(/_/g, " "));
      o.field(adl, "Allowed actions", o.actionsText(c));
      o.field(adl, "Expires", c ? o.str(c.expires_at) : "");
      o.field(adl, "Capability", c ? o.digestPrefix(c.digest) : "");
      o.field(adl, "Item", o.str(item.id));
      sec.appendChild(adl);
      sec.appendChild(o.el("p", "muted", "Decide from the Needs Attention card (get_attention_item)."));
      main.appendChild(sec);
    }

    if (sc.status === "running" && typeof sc.run_id === "string") {
      main.appendChild(o.el("p", "muted", "Running: this card updates when the run ends."));
      poll(sc.run_id);
    }
  }

  // name shows the workflow's display name (the operator's label, else its
  // workflow card's name) in place of the opaque id, asked once per id from
  // get_workflow through the host; without one, or without an answer, the
  // id stays.
  var names = {};
  function name(id, title) {
    var known = names[id];
    if (typeof known === "string") {
      if (known) title.textContent = known;
      return;
    }
    if (known) {
      known.then(function () { name(id, title); });
      return;
    }
    names[id] = o.callTool("get_workflow", { workflow: id }).then(function (r) {
      var w = r && r.structuredContent;
      names[id] = w && typeof w === "object" && w.id === id ? (o.str(w.label) || o.str(w.name)) : "";
    }, function () {
      names[id] = "";
    });
    names[id].then(function () { name(id, title); });
  }

  // poll long-polls get_run_report through the host while the run runs.
  function poll(runID) {
    if (polling === runID) return;
    polling = runID;
    o.callTool("get_run_report", { run_id: runID, wait_ms: 20000 }).then(function (r) {
      polling = "";
      if (r && r.structuredContent) render(r.structuredContent);
    }, function () {
      polling = "";
      main.appendChild(o.el("p", "muted", "Live updates stopped: the host did not answer. Ask for the run report again."));
    });
  }

  o.start("openadapt-agent run card", function (result) { render(result.structuredContent); });
})();
