// The run page's target filter, without a reload: the form works without this script
// (it filters on the server); with it, changing a choice hides the targets that do not
// match at once. Served as a static file: the dashboard's CSP allows no inline script.
(function () {
  "use strict";
  function ready() {
    var form = document.getElementById("target-filters");
    if (!form) { return; }
    var verdict = document.getElementById("t-verdict");
    var criterion = document.getElementById("t-criterion");
    var shown = document.getElementById("shown-count");
    var empty = document.getElementById("no-targets");
    var targets = document.querySelectorAll("#targets > article.target");
    function apply() {
      var count = 0;
      for (var i = 0; i < targets.length; i++) {
        var t = targets[i];
        var failed = (t.getAttribute("data-failed") || "").split(" ");
        var visible = (!verdict.value || t.getAttribute("data-verdict") === verdict.value) &&
          (!criterion.value || failed.indexOf(criterion.value) >= 0);
        t.hidden = !visible;
        if (visible) { count++; }
      }
      shown.textContent = String(count);
      empty.hidden = count !== 0;
    }
    verdict.addEventListener("change", apply);
    criterion.addEventListener("change", apply);
    document.body.setAttribute("data-run-script", "ready");
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", ready);
  } else {
    ready();
  }
})();
