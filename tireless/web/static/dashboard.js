// tireless web: the dashboard's one script (served by the app itself, nothing from elsewhere).
// The pages work without it; it adds the browser's local time with its zone and "3 min ago" to
// every <time>, and the pausable auto-refresh of the page (body data-refresh, in seconds).
"use strict";

(function () {
  var absolute = new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short"
  });
  var relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
  var steps = [["second", 60], ["minute", 60], ["hour", 24], ["day", 365]];

  function ago(date) {
    var amount = (date.getTime() - Date.now()) / 1000;
    for (var i = 0; i < steps.length; i++) {
      if (Math.abs(amount) < steps[i][1]) {
        return relative.format(Math.round(amount), steps[i][0]);
      }
      amount /= steps[i][1];
    }
    return relative.format(Math.round(amount), "year");
  }

  function showTimes() {
    document.querySelectorAll("time[datetime]").forEach(function (element) {
      var date = new Date(element.getAttribute("datetime"));
      if (isNaN(date.getTime())) { return; }
      element.textContent = absolute.format(date) + " (" + ago(date) + ")";
      element.title = element.getAttribute("datetime");
    });
  }

  var KEY = "tireless-refresh-paused";
  var timer = null;

  function paused() { return window.localStorage.getItem(KEY) === "yes"; }

  function busy() {
    // Never reload under a person's hands: a checked box, a field being typed in, a selection.
    var active = document.activeElement;
    return document.querySelector("input[type=checkbox]:checked") !== null ||
      (active !== null && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName)) ||
      String(window.getSelection()) !== "";
  }

  function schedule(seconds, button) {
    if (timer !== null) { window.clearTimeout(timer); timer = null; }
    button.textContent = paused() ? "Resume auto-refresh" : "Pause auto-refresh (" + seconds + " s)";
    button.setAttribute("aria-pressed", paused() ? "true" : "false");
    if (paused()) { return; }
    timer = window.setTimeout(function tick() {
      if (busy()) { timer = window.setTimeout(tick, seconds * 1000); return; }
      window.location.reload();
    }, seconds * 1000);
  }

  document.addEventListener("DOMContentLoaded", function () {
    showTimes();
    window.setInterval(showTimes, 30000);
    var seconds = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
    var button = document.getElementById("refresh-toggle");
    if (!(seconds > 0) || button === null) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      window.localStorage.setItem(KEY, paused() ? "no" : "yes");
      schedule(seconds, button);
    });
    schedule(seconds, button);
  });
}());
