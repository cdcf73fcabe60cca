"""Operations: liveness and queue depth (``/api/v1/health``), Prometheus metrics (``/metrics``); no authentication."""
