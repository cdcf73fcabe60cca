"""LTI 1.3 Advantage: the grader as a tool that Canvas, Moodle or any LTI 1.3 platform launches.

From the bottom (models in ``server.models.lti``), each module uses only those above it::

    claims       claim names, role URIs and what they mean here (pure)
    keys         the tool's RSA keys: made, encrypted at rest, rotated, published, used to sign
    http         the one way the tool calls an LMS: https only (loopback aside), bounded, one deadline
    platforms    registrations (issuer, client id, deployments, endpoints) and their cached JWKS
    launch       the OIDC login and the validation of a launch's id_token
    accounts     users, courses and memberships made or linked from a validated launch
    services     LTI Advantage service calls: an access token, then NRPS and AGS
    roster       NRPS: members in, roles updated, dropped members marked (and no longer staff)
    lineitems    AGS line items: one per exercise, found by resource id and tag before creating
    deeplink     deep linking: the instructor's pick becomes signed content items
    grades       AGS scores: what the LMS has, what would be sent (preview), sending (apply)
    jobs         the automatic mode: a background job per course, retried with backoff
    pages        the HTML of the launch, deep-linking and course LTI pages
    router       /lti/login, /lti/launch, /lti/jwks, /lti/deep-link, /dashboard/lti, the JSON API
    cli          ``ppo-grader lti ...``

Services never import the router, the app or the worker pool. docs/lti.md is the set-up guide.
"""
