/* attn-trace step navigator: progressive enhancement only.  Without this
   script every step is on the page; with it, Previous/Next buttons (and the
   arrow keys) walk through the page's stops (class "stop": the worked results
   chosen by the page builder, never a folded expansion), and a link to any
   step (a heatmap cell) opens and highlights it; Next then goes on from there.
   The buttons sit in the text, right under the current step, so they never
   cover it; on a screen wide enough they float in the margin.  Moving the
   navigator keeps the focus on the button that was pressed (or on the other
   one, when it becomes disabled at either end); the arrow keys leave alone a
   box that scrolls sideways (a wide table, an equation, code), where they
   scroll; the keys are written next to the buttons. */
(function () {
  "use strict";
  var root = document.querySelector(".attn-trace-report");
  if (!root) { return; }
  var steps = Array.prototype.slice.call(root.querySelectorAll(".stop"));
  if (!steps.length) { return; }
  var group = root.querySelector("details.group");
  if (group) { group.open = false; }
  var current = -1;
  var loose = false;  /* a linked step that is not a stop is marked: current is the last stop before it */
  function move(delta) {
    if (loose && delta < 0) { go(Math.max(current, 0)); }
    else { go(current < 0 && delta < 0 ? 0 : current + delta); }
  }
  var nav = document.createElement("nav");
  nav.className = "stepper";
  nav.setAttribute("aria-label", root.getAttribute("data-nav-label"));
  var where = document.createElement("span");
  where.className = "where";
  where.setAttribute("aria-live", "polite");
  function button(text, delta, name) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = name;
    b.textContent = text;
    b.addEventListener("click", function () { move(delta); });
    return b;
  }
  var prev = button("\u2190 " + root.getAttribute("data-prev"), -1, "prev");
  var next = button(root.getAttribute("data-next") + " \u2192", 1, "next");
  nav.appendChild(prev);
  nav.appendChild(where);
  nav.appendChild(next);
  var keys = document.createElement("span");
  keys.className = "keys";
  keys.textContent = root.getAttribute("data-keys");
  nav.appendChild(keys);
  var head = root.querySelector("header");
  (head || root.firstChild).after(nav);
  var marked = null;
  function mark(el) {
    if (marked) { marked.classList.remove("current"); }
    marked = el;
    var fold = el.closest("details");
    if (fold) { fold.open = true; }
    el.classList.add("current");
  }
  function into(el) {
    var top = el.getBoundingClientRect().top + window.scrollY;
    window.scrollTo(0, Math.max(0, top - window.innerHeight * 0.15));
  }
  function place(el) {  /* moving a focused button out of the document blurs it: give the focus back */
    var had = document.activeElement;
    el.after(nav);
    if (had === prev || had === next) {
      var keep = had.disabled ? (had === prev ? next : prev) : had;
      keep.focus({ preventScroll: true });
    }
  }
  function show(i, scroll) {
    if (i < 0 || i >= steps.length) { return; }
    current = i;
    loose = false;
    var el = steps[i];
    mark(el);
    prev.disabled = i === 0;
    next.disabled = i === steps.length - 1;
    place(el);
    where.textContent = (i + 1) + " / " + steps.length;
    if (scroll) { into(el); }
  }
  function go(i) {
    i = Math.max(0, Math.min(steps.length - 1, i));
    show(i, true);
    history.replaceState(null, "", "#" + steps[i].id);
  }
  function fromHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id ? document.getElementById(id) : null;
    if (!el) { return; }
    var i = steps.indexOf(el);
    if (i < 0) {
      var inner = el.querySelector(".stop");
      i = inner ? steps.indexOf(inner) : -1;
    }
    if (i >= 0) { show(i, true); return; }
    if (!el.classList.contains("step")) { return; }
    mark(el);
    place(el);
    into(el);
    current = -1;  /* Next goes on to the first stop after this step, Previous back to the one before */
    loose = true;
    steps.forEach(function (s, n) {
      if (s.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) { current = n; }
    });
    prev.disabled = current < 0;
    next.disabled = current === steps.length - 1;
  }
  window.addEventListener("hashchange", fromHash);
  function sideways(el) {  /* inside a box the arrow keys scroll (or a field they edit) */
    for (; el && el.nodeType === 1; el = el.parentElement) {
      if (/^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName) || el.isContentEditable) { return true; }
      var o = getComputedStyle(el).overflowX;
      if ((o === "auto" || o === "scroll") && el.scrollWidth > el.clientWidth) { return true; }
    }
    return false;
  }
  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) { return; }
    var arrow = e.key === "ArrowRight" || e.key === "ArrowLeft";
    if (arrow && sideways(e.target)) { return; }
    if (e.key === "ArrowRight" || e.key === "j") { move(1); }
    else if (e.key === "ArrowLeft" || e.key === "k") { move(-1); }
  });
  window.addEventListener("beforeprint", function () {
    Array.prototype.forEach.call(root.querySelectorAll("details"), function (d) { d.open = true; });
  });
  where.textContent = "\u2013 / " + steps.length;
  prev.disabled = true;
  fromHash();
}());
