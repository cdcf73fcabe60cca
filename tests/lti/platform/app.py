"""An independent LTI 1.3 platform (a stand-in LMS) for the tests, run as its own HTTP process.

Built on the PyPI package ``lti1p3platform`` (0.1.8, MIT): its ``Registration`` holds the
platform's own RSA keys and signs; its ``LTIAdvantageMessageLaunchAbstract`` builds the
launch message (user, roles, context, resource link, custom parameters, AGS and NRPS claims,
deep-linking settings) and validates the tool's answer to the authorization request; its
``FastAPIOIDCLogin`` starts the third-party login; ``get_access_token`` checks the tool's
client assertion against the tool's JWKS; ``validate_deeplinking_resp`` checks a deep-linking
answer; ``AssignmentsGradesService`` and ``NamesRoleProvisioningService`` authenticate the
service calls (bearer token and scopes) and dispatch them.

What this app adds to the package (the package leaves storage and wiring to its user):
- the HTTP routes, and the launch form (the package's FastAPI launch adapter imports
  ``pkg_resources``, which current setuptools no longer has, so the form is rendered here);
- in-memory storage behind the abstract service methods: line items (filtered by
  ``resource_id`` and ``tag``), scores (refused with 409 when older than the last, as AGS
  says), results, the roster; the wire format of AGS containers (JSON arrays);
- deep linking's return endpoint making a resource link, and a line item when the content
  item carries one;
- test controls under ``/test/``: the people and roster, the state (scores received, line
  items, resource links, key-set fetches), a key rotation, AGS failures on demand, and forged
  launches (``forge=``: wrong audience, expired, unknown kid, another key, unregistered
  deployment) made by changing what the package built before it is signed.
"""

from __future__ import annotations

import copy
import json
import os
import secrets
import threading
import time
from html import escape
from typing import Any
from urllib.parse import parse_qs, urlencode

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from lti1p3platform.exceptions import LineItemNotFoundException, LtiException
from lti1p3platform.framework.fastapi.oidc_login import FastAPIOIDCLogin
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request as LtiRequest
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService, NamesRoleProvisioningService

STAFF = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
TA = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
DEPLOYMENT = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
INSTITUTION_STUDENT = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student"


def _pem_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()
    return private, public


class World:
    """Everything the platform knows, behind one lock (uvicorn serves from threads)."""

    def __init__(self, base: str, tool: str, client_id: str, deployment_id: str) -> None:
        self.lock = threading.Lock()
        self.base, self.tool, self.client_id, self.deployment_id = base, tool, client_id, deployment_id
        self.private, self.public = _pem_pair()
        self.users: dict[str, dict[str, Any]] = {}
        self.contexts: dict[str, dict[str, str]] = {}
        #: context -> members as NRPS lists them; None: every user with a role in the context.
        self.rosters: dict[str, list[dict[str, Any]]] = {}
        self.line_items: dict[str, dict[str, Any]] = {}
        self.scores: list[dict[str, Any]] = []
        self.results: dict[tuple[str, str], dict[str, Any]] = {}
        self.resource_links: list[dict[str, Any]] = []
        self.hints: dict[str, dict[str, str]] = {}
        self.jwks_fetches = 0
        self.token_requests = 0
        self.fail_ags = 0
        self.ags_requests = 0

    def registration(self) -> Registration:
        return (
            Registration()
            .set_iss(self.base)
            .set_client_id(self.client_id)
            .set_deployment_id(self.deployment_id)
            .set_launch_url(f"{self.tool}/lti/launch")
            .set_deeplink_launch_url(f"{self.tool}/lti/launch")
            .set_oidc_login_url(f"{self.tool}/lti/login")
            .set_tool_key_set_url(f"{self.tool}/lti/jwks")
            .set_platform_public_key(self.public)
            .set_platform_private_key(self.private)
        )

    def state(self) -> dict[str, Any]:
        return {
            "line_items": list(self.line_items.values()),
            "scores": self.scores,
            "results": [dict(v, lineitem=k[0]) for k, v in self.results.items()],
            "resource_links": self.resource_links,
            "jwks_fetches": self.jwks_fetches,
            "token_requests": self.token_requests,
            "ags_requests": self.ags_requests,
            "kid": self.registration().get_kid(),
        }


class PlatformConf(LTI1P3PlatformConfAbstract):
    """The package's platform configuration, for the one registered tool."""

    def init_platform_config(self, **kwargs: Any) -> None:
        self._registration = kwargs["world"].registration()

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        assert self._registration is not None
        return self._registration


class WireRequest(LtiRequest):
    """The package's request view of a Starlette request whose body was already read."""

    def build_metadata(self, request: Any) -> Any:
        http, body = request
        kind = http.headers.get("content-type", "")
        return {
            "method": http.method,
            "form_data": {k: v[0] for k, v in parse_qs(body.decode()).items()} if "form" in kind else {},
            "get_data": dict(http.query_params),
            "headers": http.headers,  # case-insensitive, as the package reads "Authorization"
            "content_type": kind,
            "path": http.url.path,
            "json": json.loads(body) if body and "json" in kind else None,
        }


class Login(FastAPIOIDCLogin):
    """The package's FastAPI login, with the message hint this platform uses (a launch's id)."""

    def set_lti_message_hint(self, **kwargs: Any) -> None:
        self._lti_message_hint = kwargs["hint"]


class Launch(LTIAdvantageMessageLaunchAbstract):
    """The package's launch builder; ``forge`` changes the built message before it is signed."""

    forge = ""

    def render_launch_form(self, launch_data: dict[str, Any], **kwargs: Any) -> HTMLResponse:
        url, token, state = (escape(str(launch_data[k]), quote=True) for k in ("launch_url", "id_token", "state"))
        return HTMLResponse(
            "<!doctype html><html><body><form id='lti-launch' method='post' action='" + url + "'>"
            f"<input type='hidden' name='id_token' value='{token}'><input type='hidden' name='state' value='{state}'>"
            "<button type='submit'>Continue</button></form>"
            "<script>document.getElementById('lti-launch').submit()</script></body></html>"
        )

    def get_launch_message(self, include_extra_claims: bool = True) -> dict[str, Any]:
        message = super().get_launch_message(include_extra_claims)
        if self.forge == "wrong_aud":
            message["aud"] = message["azp"] = "another-tool"
        if self.forge == "bad_deployment":
            message["https://purl.imsglobal.org/spec/lti/claim/deployment_id"] = "never-registered"
        return message

    def generate_launch_request(self) -> Any:
        if self.forge in ("unknown_kid", "other_key"):
            launch_message, state = self.get_launch_data()
            if self._dl is not None:  # pragma: no cover (forged deep links are not tested)
                raise AssertionError
            other, _ = _pem_pair()
            kid = "not-a-published-kid" if self.forge == "unknown_kid" else self._registration.get_kid()
            token = Registration.encode_and_sign(launch_message, other, headers={"kid": kid}, expiration=300)
            return {"state": state, "id_token": token}
        return super().generate_launch_request()


def create_platform(world: World) -> FastAPI:
    """The platform's HTTP app over ``world``."""
    app = FastAPI()
    conf = lambda: PlatformConf(world=world)  # noqa: E731 (a fresh view of the registration per request)

    async def wire(request: Request) -> WireRequest:
        return WireRequest((request, await request.body()))

    # --- launches ----------------------------------------------------------------------------

    @app.get("/launch")
    def start_launch(request: Request) -> Response:
        """Third-party initiated login: the browser goes to the tool's login URL."""
        hint = secrets.token_urlsafe(8)
        with world.lock:
            world.hints[hint] = dict(request.query_params)
        login = Login(request, conf())
        login.set_lti_message_hint(hint=hint)
        user = world.users[request.query_params["user"]]
        return login.initiate_login(user["sub"])

    @app.get("/course-page")
    def course_page(request: Request) -> Response:
        """An LMS page that shows the tool in a frame (as Canvas does by default)."""
        query = escape(urlencode({**dict(request.query_params), "target": "iframe"}), quote=True)
        return HTMLResponse(f"<!doctype html><html><body><h1>LMS course</h1><iframe id='tool' src='/launch?{query}' width='900' height='500'></iframe></body></html>")

    @app.get("/auth")
    def authorize(request: Request) -> Response:
        """The OIDC authorization endpoint: checks the tool's request, answers with the form post."""
        params = dict(request.query_params)
        if params.get("redirect_uri") != f"{world.tool}/lti/launch" or params.get("response_mode") != "form_post":
            return HTMLResponse("redirect_uri not registered", status_code=400)
        with world.lock:
            hint = world.hints.get(params.get("lti_message_hint", ""))
        if hint is None:
            return HTMLResponse("unknown lti_message_hint", status_code=400)
        user = world.users[hint["user"]]
        if user["sub"] != params.get("login_hint"):
            return HTMLResponse("login_hint is not this user", status_code=400)
        context = hint.get("context", "c1")
        platform = conf()
        launch = Launch(WireRequest((request, b"")), platform)
        launch.forge = hint.get("forge", "")
        roles = user["roles"].get(context, [])
        launch.set_user_data(user["sub"], roles, user.get("name"), user.get("email"), user.get("login"))
        ctx = world.contexts.get(context, {"title": context, "label": context})
        launch.set_launch_context_claim(context, ["http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"], ctx["title"], ctx["label"])
        launch.set_launch_presentation_claim(hint.get("target", "window"))
        launch.set_nrps(f"{world.base}/nrps/{context}")
        if hint.get("message") == "deeplink":
            # the answer must name the deployment the request came from (a forged one: the other installation's)
            back = f"{world.base}/deep-link-return/{context}" + ("?deployment=never-registered" if launch.forge == "bad_deployment" else "")
            launch.set_dl(back, "Add ppo-grader", accept_types={"ltiResourceLink"}, extra_data={"ctx": context})
            launch.set_ags(f"{world.base}/ags/{context}/lineitems")
        else:
            link_id = hint.get("link", "link-1")
            launch.set_resource_link_claim(link_id, title=hint.get("title", link_id))
            link = next((r for r in world.resource_links if r["id"] == link_id), None)
            custom = dict(link["custom"]) if link else {}
            if "exercise" in hint:
                custom["exercise"] = hint["exercise"]
            launch.set_custom_parameters_claim(custom)
            lineitem = link.get("lineitem") if link else None
            launch.set_ags(f"{world.base}/ags/{context}/lineitems", f"{world.base}/ags/{context}/lineitems/{lineitem}" if lineitem else None)
        if launch.forge == "expired":
            launch.set_id_token_expiration(-600)
        try:
            return launch.lti_launch()
        except LtiException as exc:
            return HTMLResponse(f"launch refused by the platform: {exc}", status_code=400)

    @app.get("/jwks")
    def jwks() -> Response:
        with world.lock:
            world.jwks_fetches += 1
        return JSONResponse(conf().get_jwks())

    @app.post("/token")
    async def token(request: Request) -> Response:
        form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
        with world.lock:
            world.token_requests += 1
        try:
            return JSONResponse(conf().get_access_token(form))
        except Exception as exc:  # the package raises its own and PyJWT's errors
            return JSONResponse({"error": "invalid_client", "error_description": str(exc)}, status_code=400)

    @app.post("/deep-link-return/{context}")
    async def deep_link_return(context: str, request: Request) -> Response:
        form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
        platform = conf()
        try:
            claims = platform.tool_validate_and_decode(form["JWT"])
            if claims.get("aud") != world.base or claims.get(DEPLOYMENT) != request.query_params.get("deployment", world.deployment_id):
                raise LtiException("the answer is for another platform or deployment")
            items = platform.validate_deeplinking_resp(form)
        except Exception as exc:
            return HTMLResponse(f"<h1 id='dl-refused'>Refused</h1><p>{escape(str(exc))}</p>", status_code=400)
        made = []
        with world.lock:
            for item in items:
                link_id = f"rl-{len(world.resource_links) + 1}"
                lineitem = None
                if "lineItem" in item:
                    lineitem = _new_line_item(world, context, {**item["lineItem"], "resourceLinkId": link_id})["key"]
                world.resource_links.append(
                    {"id": link_id, "context": context, "title": item.get("title"), "custom": item.get("custom", {}), "lineitem": lineitem, "url": item.get("url")}
                )
                made.append(link_id)
        return HTMLResponse(f"<h1 id='dl-done'>Added {len(made)}</h1><p id='dl-links'>{' '.join(made)}</p>")

    # --- NRPS and AGS --------------------------------------------------------------------------

    class Roster(NamesRoleProvisioningService):
        def __init__(self, request: WireRequest, context: str) -> None:
            super().__init__(request, conf(), f"{world.base}/nrps/{context}")
            self.context = context

        def get_context_by_id(self) -> Context:
            ctx = world.contexts.get(self.context, {"title": self.context, "label": self.context})
            return Context(id=self.context, label=ctx["label"], title=ctx["title"])

        def get_member_data_page(self, **kwargs: Any) -> dict[str, Any]:
            with world.lock:
                members = world.rosters.get(self.context)
                if members is None:
                    members = [
                        {"user_id": u["sub"], "roles": u["roles"][self.context], "name": u.get("name"), "email": u.get("email"), "status": "Active"}
                        for u in world.users.values()
                        if u["roles"].get(self.context)
                    ]
            return {"content": copy.deepcopy(members), "has_next": False, "next": None}

    @app.get("/nrps/{context}")
    async def memberships(context: str, request: Request) -> Response:
        service = Roster(await wire(request), context)
        answer = service.handle_resp(service.handle_get_members)
        return JSONResponse(answer.result if answer.code == 200 else {"error": answer.message}, status_code=answer.code, media_type=answer.media_type)

    class Grades(AssignmentsGradesService):
        def __init__(self, request: WireRequest, context: str, key: str | None = None) -> None:
            base = f"{world.base}/ags/{context}/lineitems"
            super().__init__(request, conf(), base, f"{base}/{key}" if key else None)
            self.context = context

        def find_lineitems(self, **kwargs: Any) -> dict[str, Any]:
            with world.lock:
                found = [
                    _public(i)
                    for i in world.line_items.values()
                    if i["context"] == self.context
                    and (not kwargs.get("resource_id") or i.get("resourceId") == kwargs["resource_id"])
                    and (not kwargs.get("tag") or i.get("tag") == kwargs["tag"])
                ]
            return {"content": found, "has_next": False, "next": None}

        def find_lineitem(self, line_item_id: str) -> dict[str, Any]:
            item = world.line_items.get(line_item_id)
            if item is None or item["context"] != self.context:
                raise LineItemNotFoundException
            return _public(item)

        def create_lineitem(self, creation_data: dict[str, Any]) -> dict[str, Any]:
            with world.lock:
                return _public(_new_line_item(world, self.context, creation_data))

        def update_lineitem(self, update_data: dict[str, Any]) -> dict[str, Any]:
            raise LineItemNotFoundException

        def delete_lineitem(self, line_item_id: str) -> None:
            with world.lock:
                if world.line_items.pop(line_item_id, None) is None:
                    raise LineItemNotFoundException

        def update_score(self, line_item_id: str, score: dict[str, Any]) -> UpdateScoreStatus:
            with world.lock:
                if line_item_id not in world.line_items:
                    raise LineItemNotFoundException
                key = (line_item_id, str(score.get("userId")))
                last = world.results.get(key)
                if last is not None and last["timestamp"] > score["timestamp"]:
                    return UpdateScoreStatus.OLD_TIMESTAMP
                world.scores.append({"lineitem": line_item_id, "received_at": time.time(), **score})
                world.results[key] = score
                return UpdateScoreStatus.SUCCESS if last else UpdateScoreStatus.CREATED

        def get_results(self, line_item_id: str, **kwargs: Any) -> dict[str, Any]:
            with world.lock:
                if line_item_id not in world.line_items:
                    raise LineItemNotFoundException
                found = [
                    {"id": f"{world.base}/ags/{self.context}/lineitems/{line_item_id}/results/{user}", "userId": user,
                     "resultScore": s.get("scoreGiven"), "resultMaximum": s.get("scoreMaximum", 1),
                     "scoreOf": f"{world.base}/ags/{self.context}/lineitems/{line_item_id}"}
                    for (item, user), s in world.results.items()
                    if item == line_item_id
                ]
            return {"content": found, "has_next": False, "next": None}

    def _ags(answer: Any) -> Response:
        body = answer.result["content"] if isinstance(answer.result, dict) and "content" in answer.result else answer.result
        if answer.code >= 400:
            body = {"error": answer.message}
        return JSONResponse(body, status_code=answer.code, media_type=answer.media_type) if answer.code != 204 else Response(status_code=204)

    def _failing() -> Response | None:
        with world.lock:
            world.ags_requests += 1
            if world.fail_ags > 0:
                world.fail_ags -= 1
                return JSONResponse({"error": "down for maintenance"}, status_code=503)
        return None

    @app.api_route("/ags/{context}/lineitems", methods=["GET", "POST"])
    async def line_items(context: str, request: Request) -> Response:
        failing = _failing()
        if failing is not None:
            return failing
        service = Grades(await wire(request), context)
        handler = service.handle_get_lineitems if request.method == "GET" else service.handle_create_lineitem
        return _ags(service.handle_resp(handler))

    @app.post("/ags/{context}/lineitems/{key}/scores")
    async def scores(context: str, key: str, request: Request) -> Response:
        failing = _failing()
        if failing is not None:
            return failing
        service = Grades(await wire(request), context, key)
        return _ags(service.handle_resp(service.handle_update_score, line_item_id=key))

    @app.get("/ags/{context}/lineitems/{key}/results")
    async def results(context: str, key: str, request: Request) -> Response:
        failing = _failing()
        if failing is not None:
            return failing
        service = Grades(await wire(request), context, key)
        return _ags(service.handle_resp(service.handle_get_results, line_item_id=key))

    # --- test controls -----------------------------------------------------------------------

    @app.post("/test/users")
    async def set_users(request: Request) -> Response:
        body = await request.json()
        with world.lock:
            world.users.update(body.get("users", {}))
            world.contexts.update(body.get("contexts", {}))
        return JSONResponse({"ok": True})

    @app.post("/test/roster/{context}")
    async def set_roster(context: str, request: Request) -> Response:
        body = await request.json()
        with world.lock:
            world.rosters[context] = body["members"]
        return JSONResponse({"ok": True})

    @app.post("/test/rotate-key")
    def rotate_key() -> Response:
        with world.lock:
            world.private, world.public = _pem_pair()
        return JSONResponse({"kid": world.registration().get_kid()})

    @app.post("/test/fail-ags/{count}")
    def fail_ags(count: int) -> Response:
        with world.lock:
            world.fail_ags = count
        return JSONResponse({"ok": True})

    @app.get("/test/state")
    def state() -> Response:
        with world.lock:
            return JSONResponse(json.loads(json.dumps(world.state(), default=str)))

    @app.get("/test/launch-url")
    def launch_url(request: Request) -> Response:
        return JSONResponse({"url": f"{world.base}/launch?{urlencode(dict(request.query_params))}"})

    return app


def _new_line_item(world: World, context: str, data: dict[str, Any]) -> dict[str, Any]:
    key = str(len(world.line_items) + 1)
    item = {
        "key": key,
        "context": context,
        "id": f"{world.base}/ags/{context}/lineitems/{key}",
        "label": data.get("label", ""),
        "scoreMaximum": data.get("scoreMaximum", 100),
        "resourceId": data.get("resourceId"),
        "tag": data.get("tag"),
        "resourceLinkId": data.get("resourceLinkId"),
    }
    world.line_items[key] = item
    return item


def _public(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k not in ("key", "context") and v is not None}


def app_from_env() -> FastAPI:
    """The app for ``uvicorn --factory`` (``tests.lti.platform.serve``)."""
    world = World(
        os.environ["PLATFORM_URL"], os.environ["TOOL_URL"], os.environ["CLIENT_ID"], os.environ["DEPLOYMENT_ID"]
    )
    return create_platform(world)
