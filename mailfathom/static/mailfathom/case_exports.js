// The case export list: refresh each running export's progress bar from the status JSON.
// Plain script, no library. Reloads the page when an export changes state, so its download
// link (or failure code) appears; stops polling when nothing is queued or running.
// Admin puts a ModelAdmin's media in <head>, so the script waits for the page to be read.
document.addEventListener("DOMContentLoaded", function () {
  "use strict";
  var bars = document.querySelectorAll("progress.case-export-progress");
  if (!bars.length) { return; }
  var url = window.location.pathname.replace(/\/?$/, "/") + "status.json";
  var seconds = 2;
  var busy = false;

  function shown(id) {
    var badge = document.querySelector('.case-export-status[data-export="' + id + '"]');
    return badge ? badge.getAttribute("data-status") : null;
  }

  function active() {
    var badges = document.querySelectorAll(".case-export-status");
    for (var i = 0; i < badges.length; i++) {
      var status = badges[i].getAttribute("data-status");
      if (status === "queued" || status === "running") { return true; }
    }
    return false;
  }

  function refresh() {
    if (busy || document.hidden || !active()) { return; }
    busy = true;
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (data) {
        var changed = false;
        data.exports.forEach(function (row) {
          var before = shown(row.id);
          if (before === null) { return; }
          var bar = document.querySelector('progress.case-export-progress[data-export="' + row.id + '"]');
          var count = document.querySelector('.case-export-count[data-export="' + row.id + '"]');
          if (bar) { bar.value = row.percent; bar.textContent = row.percent + "%"; }
          if (count) { count.textContent = row.done + " / " + row.total; }
          if (before !== row.status) { changed = true; }
        });
        if (changed) { window.location.reload(); }
      })
      .catch(function () { /* the next tick tries again */ })
      .finally(function () { busy = false; });
  }

  window.setInterval(refresh, seconds * 1000);
});
