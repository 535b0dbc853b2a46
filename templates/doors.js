/* attn-trace doors: every number on the page opens how it was computed.

   Progressive enhancement: without this script the page reads as before.
   With it, each number that shows a step (a table cell, a worked equation's
   result, a heatmap cell: the elements with a data-id) becomes a button.
   Pressing one opens a modal dialog (WAI-ARIA's dialog pattern, built on
   <dialog>: focus moves into it and stays there, Escape closes it, and the
   focus goes back to the number that opened it) with the step's id, its
   equation with the numbers put in, its operation and its inputs; each
   input is a button again, and a trail at the top leads back.  The data
   (one JSON block, written by the page builder's doors view) is parsed only when
   the first panel opens. */
(function () {
  "use strict";
  var root = document.querySelector(".attn-trace-report");
  var source = document.getElementById("attn-trace-doors");
  if (!root || !source) { return; }
  var data = null, where = null;  /* parsed on first use; where: step id -> its row in data.s */
  function load() {
    if (!data) {
      data = JSON.parse(source.textContent);
      where = new Map();
      data.ids.forEach(function (id, n) { where.set(id, n); });
    }
    return data;
  }
  function known(id) { load(); return where.has(id); }
  function row(id) { return load().s[where.get(id)]; }
  function named(input) { return typeof input === "number" ? data.ids[input] : input; }

  /* buttons: a table cell's or an equation's contents move into one; figure cells already are links or groups */
  function wrap(el) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = "door";
    while (el.firstChild) { b.appendChild(el.firstChild); }
    el.appendChild(b);
  }
  Array.prototype.forEach.call(root.querySelectorAll("td[data-id]"), function (td) {
    if (td.textContent.trim()) { wrap(td); }
  });
  Array.prototype.forEach.call(root.querySelectorAll(".equation[data-id] > .eq > .lhs"), wrap);
  Array.prototype.forEach.call(root.querySelectorAll("svg [data-id]"), function (g) {
    if (g.tagName.toLowerCase() !== "a") {
      g.setAttribute("tabindex", "0");
      g.setAttribute("role", "button");
    }
    g.classList.add("door");
  });

  var dialog = null, title, trailBox, body, opener = null, trail = [];
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function word(key) { return load().w[key]; }
  function build() {
    dialog = el("dialog", "door-panel");
    dialog.setAttribute("aria-labelledby", "door-title");
    dialog.setAttribute("aria-modal", "true");
    var top = el("div", "door-top");
    title = el("h2", "door-title");
    title.id = "door-title";
    title.tabIndex = -1;
    var close = el("button", "door-close", word("close"));
    close.type = "button";
    close.addEventListener("click", function () { dialog.close(); });
    top.appendChild(title);
    top.appendChild(close);
    trailBox = el("nav", "door-trail");
    trailBox.setAttribute("aria-label", word("trail"));
    body = el("div", "door-body");
    dialog.appendChild(top);
    dialog.appendChild(trailBox);
    dialog.appendChild(body);
    dialog.addEventListener("close", function () {
      /* "close" is dispatched as a task of its own, after the dialog has shut: by then a quick
         reader (or a test) may have opened the next number.  Only a panel still shut hands the
         focus back; a reopened one keeps its own trail and opener (open() starts both afresh). */
      if (dialog.open) { return; }
      trail = [];
      if (opener && opener.isConnected) { opener.focus(); }
      opener = null;
    });
    dialog.addEventListener("click", function (e) {
      if (e.target === dialog) { dialog.close(); }  /* a click on the backdrop */
    });
    root.appendChild(dialog);
  }
  function doorTo(id, label) {
    if (!known(id)) { return el("code", "door-off", label); }
    var b = el("button", "door", label);
    b.type = "button";
    b.setAttribute("data-go", id);
    return b;
  }
  function drawTrail() {  /* the way here, from the number first opened: each earlier step leads back */
    trailBox.textContent = "";
    if (trail.length < 2) { return; }
    trail.forEach(function (t, n) {
      if (n === trail.length - 1) {
        var here = el("span", "door-here", t);
        here.setAttribute("aria-current", "step");
        trailBox.appendChild(here);
        return;
      }
      var back = doorTo(t, t);
      back.setAttribute("data-back", String(n));
      trailBox.appendChild(back);
      trailBox.appendChild(el("span", "door-sep", " \u2192 "));
    });
  }
  function show(id) {
    var d = load(), step = row(id);
    title.textContent = id;
    drawTrail();
    body.textContent = "";
    var list = el("dl", "door-facts");
    function fact(key, value) {
      list.appendChild(el("dt", "", word(key)));
      var dd = el("dd");
      if (typeof value === "string") { dd.textContent = value; } else { dd.appendChild(value); }
      list.appendChild(dd);
    }
    fact("value", step[1]);
    if (step[2] !== step[1]) { fact("equation", el("span", "door-eq", step[2])); }  /* an input is its value */
    fact("op", el("code", "", d.ops[step[0]]));
    var ins = el("ul", "door-inputs");
    step[3].forEach(function (input) {
      var li = el("li"), i = named(input);
      li.appendChild(doorTo(i, known(i) ? i + " = " + row(i)[1] : i));
      ins.appendChild(li);
    });
    if (step[4] > 0) { ins.appendChild(el("li", "door-more", word("more").replace("{n}", step[4]))); }
    fact("inputs", step[3].length ? ins : el("span", "", word("none")));
    body.appendChild(list);
    title.focus();
  }
  function open(id, from) {
    if (!known(id)) { return; }
    if (!dialog) { build(); }
    if (!dialog.open) {
      opener = from;
      trail = [id];
      dialog.showModal();
    } else {
      trail.push(id);
    }
    show(id);
  }
  function idOf(target) {
    var door = target.closest(".door");
    if (!door) { return null; }
    var holder = door.closest("[data-id]");
    return holder ? holder.getAttribute("data-id") : null;
  }
  root.addEventListener("click", function (e) {
    var go = e.target.closest("[data-go]");
    if (go && dialog && dialog.contains(go)) {
      var back = go.getAttribute("data-back");
      if (back !== null) { trail = trail.slice(0, Number(back)); }
      open(go.getAttribute("data-go"), null);
      return;
    }
    var id = idOf(e.target);
    if (id && known(id)) {
      e.preventDefault();
      open(id, e.target.closest(".door"));
    }
  });
  root.addEventListener("keydown", function (e) {
    if (dialog && dialog.open) {  /* the page's own keys (the step navigator's) wait while a panel is open */
      e.stopPropagation();
      return;
    }
    if (e.key !== "Enter" && e.key !== " ") { return; }  /* a figure cell drawn as an SVG group acts as a button */
    var t = e.target;
    if (t.getAttribute && t.getAttribute("role") === "button" && t.hasAttribute("data-id")) {
      e.preventDefault();
      open(t.getAttribute("data-id"), t);
    }
  });
}());
