// The LTI pages' one script (server/lti/pages.py): continue an accepted launch at the top level
// (from the LMS's frame, the link opens a new tab instead: the site's pages refuse framing), and
// post a deep-linking answer back to the LMS. Without script, each page has a link or a button.
(function () {
  "use strict";
  var next = document.querySelector("a[data-continue]");
  if (next) {
    if (window.top === window.self) {
      window.location.replace(next.href);
    } else {
      next.target = "_blank";
      next.rel = "noopener";
    }
  }
  var answer = document.querySelector("form[data-autosubmit]");
  if (answer) {
    answer.submit();
  }
})();
