"""The HTML kit the domains' pages share: the page shell and ``e()`` (``html``), charts, responses
and security headers, the session cookie, login and logout (``router``), page authorization
(``deps``: ``WebUser``, ``WebInstructor``) and what a page answers instead (``errors``).

The pages themselves live with their domains (``server.dashboard``, ``server.leaderboard``; the
feedback renderer in ``server.submissions``); nothing here imports them.
"""
