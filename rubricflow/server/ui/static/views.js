// rubricflow review dashboard: wide tables on a narrow screen. A table wider than its
// column (a phone, a long criterion list) scrolls inside a box of its own, so the page
// never scrolls sideways; the box takes the focus (a keyboard user scrolls it) and is
// named after the table's caption. Runs on load and after every htmx swap.
(function () {
  "use strict";

  function nameOf(table) {
    var caption = table.querySelector("caption");
    var text = caption ? caption.textContent.trim() : "";
    return text ? text.slice(0, 120) : "Table";
  }

  function focusable(box, table) {
    if (!box.hasAttribute("tabindex")) box.setAttribute("tabindex", "0");
    if (!box.hasAttribute("role")) box.setAttribute("role", "region");
    if (!box.hasAttribute("aria-label") && !box.hasAttribute("aria-labelledby")) {
      box.setAttribute("aria-label", nameOf(table));
    }
  }

  function fit(root) {
    var tables = (root || document).querySelectorAll("main table");
    for (var i = 0; i < tables.length; i++) {
      var table = tables[i];
      var parent = table.parentElement;
      if (!parent) continue;
      if (parent.classList.contains("table-scroll")) {
        if (parent.scrollWidth > parent.clientWidth + 1) focusable(parent, table);
        continue;
      }
      if (table.scrollWidth <= parent.clientWidth + 1) continue;
      var box = document.createElement("div");
      box.className = "table-scroll";
      parent.insertBefore(box, table);
      box.appendChild(table);
      focusable(box, table);
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { fit(document); });
  } else {
    fit(document);
  }
  document.addEventListener("htmx:afterSwap", function (event) { fit(event.target); });
})();
