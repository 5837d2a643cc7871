/* A box that scrolls (a wide table, formula, notebook cell or output) must be reachable
   by keyboard, or a reader without a mouse cannot see its right-hand side. Material does this for
   its own code blocks; this does it for every other box in the page that overflows, as a named
   region, and undoes it when the box fits again (whether it overflows depends on the window). */
(function () {
  const MARK = "data-scroll-focus";   // on the boxes this script made focusable, and only those
  const KINDS = [
    [".md-typeset__scrollwrap, .md-typeset__table, table", "Table"],
    [".math-display, math", "Formula"],
    [".jp-OutputArea", "Cell output"],
    [".highlight-ipynb, .highlight, pre", "Code"],
  ];

  function scrolls(el) {
    const wide = el.scrollWidth > el.clientWidth, tall = el.scrollHeight > el.clientHeight;
    if (!wide && !tall) return false;
    const style = getComputedStyle(el), scrolling = (overflow) => overflow === "auto" || overflow === "scroll";
    return (wide && scrolling(style.overflowX)) || (tall && scrolling(style.overflowY));
  }

  function reachable(el) {
    return el.querySelector("a[href], button, input, select, textarea, [tabindex]:not([tabindex='-1'])") !== null;
  }

  function label(el) {
    const kind = KINDS.find(([selector]) => el.closest(selector) || el.querySelector(selector));
    return `${kind ? kind[1] : "Content"}, scrollable`;
  }

  function update() {
    for (const el of document.querySelectorAll(".md-content *")) {
      const mine = el.hasAttribute(MARK);
      const needs = scrolls(el) && (mine || (!el.hasAttribute("tabindex") && !reachable(el)));
      if (needs && !mine) {
        el.setAttribute("tabindex", "0");
        el.setAttribute("role", "region");
        el.setAttribute("aria-label", label(el));
        el.setAttribute(MARK, "");
      } else if (!needs && mine) {
        for (const name of ["tabindex", "role", "aria-label", MARK]) el.removeAttribute(name);
      }
    }
  }

  window.addEventListener("load", update);                  // after images and fonts have their sizes
  let frame = 0;
  window.addEventListener("resize", () => {
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(update);
  });
  if (window.document$) window.document$.subscribe(update);   // Material: the page is ready
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", update);
  else update();
})();
