/* On a source page (site_build/source_pages.py), mark the lines an excerpt links to: the address's
   #L<a>-L<b> marks lines a to b (a single line, #L<n>, is marked by CSS :target), again whenever the
   address's fragment changes. Pages without a listing are left alone. */
(function () {
  function mark() {
    const listing = document.querySelector(".source-listing");
    if (!listing) return;
    listing.querySelectorAll(".line.marked").forEach((line) => line.classList.remove("marked"));
    const range = /^#L(\d+)-L(\d+)$/.exec(window.location.hash);
    if (!range) return;
    const first = Number(range[1]), last = Number(range[2]);
    for (let n = first; n <= last; n++) {
      const line = document.getElementById(`L${n}`);
      if (line) line.classList.add("marked");
    }
  }
  window.addEventListener("hashchange", mark);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mark);
  else mark();
})();
