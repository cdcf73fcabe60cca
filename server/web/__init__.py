"""The instructors' server-rendered leaderboard page (``/leaderboard``)."""
