// The reviewer's workbench: keyboard shortcuts (listed on `?`), a reason that is only
// whitespace refused in the form, the live queue's catch-up after a reconnect (with an
// offline notice), live updates that keep the focus, the scroll position and the
// selection (announced through aria-live), and a banner on an artifact page that someone
// else changed. Every page works without it. Served as a static file: the CSP allows no
// inline script.
(function () {
  "use strict";

  function typing(target) {
    if (!target || !target.tagName) { return false; }
    var tag = target.tagName;
    return tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable ||
      (tag === "INPUT" && ["checkbox", "radio", "submit", "button"].indexOf(target.type) < 0);
  }

  function announce(text) {
    var region = document.getElementById("live-status");
    if (region) { region.textContent = text; }
  }

  // --- a reason must have words in it ---
  function guardBlank() {
    var fields = document.querySelectorAll("textarea[data-nonblank]");
    Array.prototype.forEach.call(fields, function (field) {
      function check() {
        var blank = field.value.length > 0 && field.value.trim() === "";
        field.setCustomValidity(blank ? "Write " + field.getAttribute("data-nonblank") + ": spaces alone are not a reason." : "");
      }
      field.addEventListener("input", check);
      check();
    });
  }

  // --- the queue: j/k/enter/x, and rows kept across live updates ---
  var current = -1;
  function rows() { return document.querySelectorAll("#queue-live tbody tr[data-artifact]"); }
  function choose(index) {
    var all = rows();
    if (!all.length) { return; }
    current = Math.max(0, Math.min(all.length - 1, index));
    Array.prototype.forEach.call(all, function (row, i) {
      row.classList.toggle("chosen", i === current);
      if (i === current) { row.setAttribute("aria-current", "true"); } else { row.removeAttribute("aria-current"); }
    });
    var link = all[current].querySelector("a.item-link");
    if (link) { link.focus(); }
  }
  function chosenRow() { var all = rows(); return current >= 0 && current < all.length ? all[current] : null; }

  function queueKeys(event) {
    var row;
    if (event.key === "j") { choose(current + 1); return true; }
    if (event.key === "k") { choose(current - 1); return true; }
    if (event.key === "x") {
      row = chosenRow();
      var box = row && row.querySelector("input[type=checkbox]");
      if (box) { box.checked = !box.checked; }
      return Boolean(box);
    }
    if (event.key === "Enter" && document.activeElement === document.body) {
      row = chosenRow();
      var link = row && row.querySelector("a.item-link");
      if (link) { link.click(); return true; }
    }
    return false;
  }

  // --- the artifact page: a/r/o decide, n skips ---
  function decide(key) {
    var button = document.querySelector('#decision-form button[data-key="' + key + '"]');
    if (!button) { return false; }
    var form = document.getElementById("decision-form");
    var reason = document.getElementById("reason");
    if (!reason.value.trim()) {
      reason.focus();
      reason.setCustomValidity("Write a reason first, then press Esc and " + key + ".");
      reason.reportValidity();
      reason.addEventListener("input", function clear() { reason.setCustomValidity(""); reason.removeEventListener("input", clear); });
      return true;
    }
    form.requestSubmit(button);
    return true;
  }

  function pageKeys(event) {
    if (event.key === "a" || event.key === "r" || event.key === "o") { return decide(event.key); }
    if (event.key === "n") {
      var skip = document.getElementById("skip-link");
      if (skip) { skip.click(); return true; }
    }
    return false;
  }

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var target = event.target;
    if (event.key === "Escape" && typing(target)) { target.blur(); document.body.focus(); return; }
    if (typing(target)) { return; }
    var dialog = document.getElementById("shortcuts");
    if (event.key === "?") {
      if (dialog && dialog.showModal && !dialog.open) { dialog.showModal(); }
      event.preventDefault();
      return;
    }
    if (event.key === "/") {
      var search = document.getElementById("f-q");
      if (search) { search.focus(); search.select(); event.preventDefault(); }
      return;
    }
    if (queueKeys(event) || pageKeys(event)) { event.preventDefault(); }
  }

  // --- live queue: keep focus, scroll and ticks; catch up after a reconnect ---
  var kept = null;
  function remember() {
    var active = document.activeElement;
    var row = active && active.closest ? active.closest("tr[data-artifact]") : null;
    var ticked = [];
    Array.prototype.forEach.call(document.querySelectorAll("#queue-live input[name=pick]:checked"), function (box) { ticked.push(box.value); });
    kept = {
      row: row ? row.getAttribute("data-artifact") : null,
      inLive: Boolean(active && active.closest && active.closest("#queue-live")),
      chosen: chosenRow() ? chosenRow().getAttribute("data-artifact") : null,
      ticked: ticked,
      x: window.scrollX, y: window.scrollY
    };
  }
  function restore() {
    if (!kept) { return; }
    Array.prototype.forEach.call(document.querySelectorAll("#queue-live input[name=pick]"), function (box) {
      box.checked = kept.ticked.indexOf(box.value) >= 0;
    });
    var all = rows();
    current = -1;
    Array.prototype.forEach.call(all, function (row, i) {
      if (row.getAttribute("data-artifact") === kept.chosen) { current = i; row.classList.add("chosen"); }
    });
    if (kept.inLive) {
      var target = kept.row && document.querySelector('#queue-live tr[data-artifact="' + CSS.escape(kept.row) + '"] a.item-link');
      (target || document.getElementById("queue-stream") || document.body).focus({ preventScroll: true });
    }
    window.scrollTo(kept.x, kept.y);
    var live = document.getElementById("queue-live");
    announce("The queue was updated: " + (live ? live.getAttribute("data-total") : "?") + " waiting.");
    kept = null;
  }

  var wasOpen = false;
  function catchUp() {
    var live = document.getElementById("queue-live");
    if (live && window.htmx) { window.htmx.trigger(live, "rubricflow:catch-up"); }
  }
  function liveQueue() {
    if (!document.getElementById("queue-stream")) { return; }
    document.body.addEventListener("htmx:beforeSwap", function (event) {
      if (event.detail.target && event.detail.target.id === "queue-live") { remember(); }
    });
    document.body.addEventListener("htmx:afterSettle", function (event) {
      if (event.detail.target && (event.detail.target.id === "queue-live" || event.detail.elt.id === "queue-live")) { restore(); }
    });
    document.body.addEventListener("htmx:sseError", function () {
      document.body.setAttribute("data-live", "offline");
      announce("Offline: reconnecting to the server…");
    });
    document.body.addEventListener("htmx:sseOpen", function () {
      document.body.setAttribute("data-live", "online");
      if (wasOpen) {
        announce("Reconnected: fetching what changed.");
        catchUp();
      }
      wasOpen = true;
    });
  }

  // --- artifact page: say when someone else changed it ---
  function watchArtifact() {
    var page = document.getElementById("artifact-page");
    if (!page || !window.fetch) { return; }
    var id = page.getAttribute("data-artifact");
    var version = page.getAttribute("data-version");
    var banner = document.getElementById("changed-banner");
    function check() {
      if (document.hidden) { return; }
      fetch("/ui/artifacts/" + encodeURIComponent(id) + "/version", { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (answer) { return answer.ok ? answer.json() : null; })
        .then(function (now) {
          if (now && String(now.version) !== version && banner && banner.hidden) {
            banner.hidden = false;
            announce("Someone else changed this artifact.");
          }
        })
        .catch(function () { /* offline: try again at the next tick */ });
    }
    window.setInterval(check, 5000);
    document.addEventListener("visibilitychange", check);
  }

  // --- times: the exact time in the reader's own zone, in the tooltip ---
  function localTimes(root) {
    Array.prototype.forEach.call((root || document).querySelectorAll("time[datetime]"), function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (!isNaN(when.getTime())) { el.title = when.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" }); }
    });
  }

  function ready() {
    localTimes();
    document.body.addEventListener("htmx:afterSettle", function () { localTimes(); });
    guardBlank();
    liveQueue();
    watchArtifact();
    document.addEventListener("keydown", onKey);
    document.body.setAttribute("data-workbench", "ready");
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", ready); } else { ready(); }
})();
