/* The printable book (the print-site plugin's page, #print-site-page): every collapsed answer is
   open, so the printout holds it. On any page, printing opens the collapsed answers first. */
(function () {
  function openAll() {
    document.querySelectorAll(".md-content details").forEach((d) => { d.open = true; });
  }
  if (document.getElementById("print-site-page")) {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", openAll);
    else openAll();
  }
  window.addEventListener("beforeprint", openAll);
})();
