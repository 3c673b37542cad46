(function () {
  "use strict";
  // Filters the site's tables by agent, board, flag and free text; the state lives in the URL's hash so that a
  // filtered view can be linked (index.html#agent=agent1&flag=RULE_VIOLATION). Only dataset and hidden are
  // touched: no text from the arena is ever parsed as HTML.
  var ctl = {
    agent: document.getElementById("f-agent"), board: document.getElementById("f-board"),
    flag: document.getElementById("f-flag"), q: document.getElementById("f-q"),
    base: document.getElementById("f-baselines")
  };
  var status = document.getElementById("f-status");

  function state() {
    return {agent: ctl.agent.value, board: ctl.board.value, flag: ctl.flag.value,
            q: ctl.q.value.trim().toLowerCase(), base: ctl.base.checked};
  }

  function matches(el, s) {
    var d = el.dataset;
    var flags = d.flags ? d.flags.split(" ") : [];
    if (s.board && d.board !== s.board) return false;
    if (s.q && (d.search || "").indexOf(s.q) < 0) return false;
    if (d.kind === "baseline") return s.base;
    if (s.agent && d.agent !== s.agent) return false;
    if (s.flag === "flagged") return flags.length > 0;
    if (s.flag === "clean") return flags.length === 0;
    if (s.flag) return flags.indexOf(s.flag) >= 0;
    return true;
  }

  function apply(writeHash) {
    var s = state(), shown = 0, total = 0;
    document.querySelectorAll("[data-filter]").forEach(function (el) {
      var ok = matches(el, s);
      el.hidden = !ok;
      if (el.dataset.kind === "review") { total += 1; if (ok) shown += 1; }
    });
    document.querySelectorAll("section[data-board]").forEach(function (sec) {
      sec.hidden = s.board !== "" && sec.dataset.board !== s.board;
    });
    document.querySelectorAll("tr[data-agent-row]").forEach(function (tr) {
      tr.hidden = s.agent !== "" && tr.dataset.agentRow !== s.agent;
    });
    status.textContent = shown + " of " + total + " reviews shown";
    if (writeHash) {
      var p = new URLSearchParams();
      if (s.agent) p.set("agent", s.agent);
      if (s.board) p.set("board", s.board);
      if (s.flag) p.set("flag", s.flag);
      if (ctl.q.value.trim()) p.set("q", ctl.q.value.trim());
      if (!s.base) p.set("baselines", "0");
      history.replaceState(null, "", p.toString() ? "#" + p.toString() : location.pathname + location.search);
    }
  }

  function pick(select, value) {
    for (var i = 0; i < select.options.length; i += 1) {
      if (select.options[i].value === value) { select.value = value; return; }
    }
    select.value = "";
  }

  function fromHash() {
    var hash = location.hash.replace(/^#/, "");
    if (hash && hash.indexOf("=") < 0) return;  // a plain anchor (#agents): not a filter
    var p = new URLSearchParams(hash);
    pick(ctl.agent, p.get("agent") || "");
    pick(ctl.board, p.get("board") || "");
    pick(ctl.flag, p.get("flag") || "");
    ctl.q.value = p.get("q") || "";
    ctl.base.checked = p.get("baselines") !== "0";
    apply(false);
  }

  ["agent", "board", "flag", "base"].forEach(function (k) {
    ctl[k].addEventListener("change", function () { apply(true); });
  });
  ctl.q.addEventListener("input", function () { apply(true); });
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
