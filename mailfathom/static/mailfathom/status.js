// Refresh the System status page in place: fetch the live fragment and swap it in.
// Plain script, no library; pauses while the tab is hidden.
(function () {
  "use strict";
  var box = document.getElementById("system-status");
  var note = document.getElementById("status-refresh-note");
  if (!box) { return; }
  var url = box.getAttribute("data-refresh-url");
  var seconds = parseInt(box.getAttribute("data-refresh-seconds"), 10) || 5;
  var busy = false;

  function refresh() {
    if (busy || document.hidden) { return; }
    busy = true;
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.text();
      })
      .then(function (html) {
        box.innerHTML = html;
        box.setAttribute("data-refreshed", String(Date.now()));
        note.textContent = "This page refreshes itself every " + seconds + " seconds.";
      })
      .catch(function (error) {
        note.textContent = "The last refresh failed (" + error.message + "); trying again in " + seconds + " seconds.";
      })
      .finally(function () { busy = false; });
  }

  window.setInterval(refresh, seconds * 1000);
  document.addEventListener("visibilitychange", refresh);
})();
