// ppo-grader live pages: reload when a submission is added or a verdict arrives.
// The page carries the change mark it was drawn at (data-live-mark); this polls the
// same-origin JSON at data-live every 5 s (30 s while the tab is hidden) and reloads
// when the server's mark differs. No other script runs on these pages.
// A form marked data-live-hold (the upload form) holds the reload once something is typed
// or chosen in it, so a verdict arriving never wipes what the learner is about to send.
(function () {
  "use strict";
  var body = document.body;
  var url = body.getAttribute("data-live");
  var mark = body.getAttribute("data-live-mark");
  if (!url || mark === null) { return; }
  var failures = 0;
  var held = false;
  var forms = document.querySelectorAll("form[data-live-hold]");
  for (var i = 0; i < forms.length; i += 1) {
    forms[i].addEventListener("input", function () { held = true; });
    forms[i].addEventListener("change", function () { held = true; });
  }
  function schedule() {
    window.setTimeout(check, document.hidden ? 30000 : 5000);
  }
  function check() {
    window.fetch(url, { credentials: "same-origin", cache: "no-store", headers: { "Accept": "application/json" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (answer) {
        failures = 0;
        if (answer.mark !== mark && !held) { window.location.reload(); return; }
        schedule();
      })
      .catch(function () {
        failures += 1;
        if (failures < 20) { schedule(); }  // a logged-out or unreachable server: stop after a while
      });
  }
  schedule();
})();
