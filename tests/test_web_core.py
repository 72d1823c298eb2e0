"""The portal's core against a real `iolens web` server on a real SQLite file: tokens, sign-in, sessions,
CSRF, the proxy mode's trusted header, security headers, assets, bad options, and stopping on signals."""

from __future__ import annotations

import re
import signal
import urllib.parse
from pathlib import Path

import pytest

from .db_helpers import iolens, iolens_env
from .web_helpers import USER_A, USER_B, Seeded, fetch, portal, seed, token


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    root = tmp_path_factory.mktemp("portal")
    return seed(str(root / "portal.db"), root)


def _job_links(body: str) -> set[int]:
    return {int(m) for m in re.findall(r'href="/jobs/(\d+)"', body)}


def test_tokens_are_made_listed_and_revoked(tmp_path: Path) -> None:
    url = str(tmp_path / "t.db")
    t1 = token(url, "carol")
    assert t1.startswith("iol_") and len(t1) > 40
    token(url, "dave", staff=True)
    r = iolens("web", "token", "list", "--db", url, env=iolens_env())
    assert r.returncode == 0
    lines = [ln.split("\t") for ln in r.stdout.splitlines()]
    assert [(ln[1], ln[2], ln[3]) for ln in lines] == [("carol", "user", "live"), ("dave", "staff", "live")]
    assert t1 not in r.stdout and t1 not in (tmp_path / "t.db").read_bytes().decode("latin-1")
    r = iolens("web", "token", "revoke", "--user", "carol", "--db", url, env=iolens_env())
    assert r.returncode == 0 and "revoked 1 token" in r.stdout
    r = iolens("web", "token", "list", "carol", "--db", url, env=iolens_env())
    assert r.stdout.split("\t")[3] == "revoked"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--port", "0"], "--port"),
        (["--port", "x"], "--port"),
        (["--workers", "0"], "--workers"),
        (["--auth", "kerberos"], "--auth"),
        (["--auth", "proxy"], "--trusted-proxy"),
        (["--auth", "proxy", "--trusted-proxy", "not-an-address"], "--trusted-proxy"),
        (["--user-header", "X User"], "--user-header"),
        (["--frobnicate"], "--frobnicate"),
        (["token", "add"], "USER"),
        (["token", "add", "a b"], "user name"),
        (["token", "revoke", "x"], "token id"),
    ],
)
def test_bad_options_exit_2_naming_the_option(tmp_path: Path, args: list[str], message: str) -> None:
    url = str(tmp_path / "none.db")
    r = iolens("web", *args, "--db", url, env=iolens_env(), timeout=60)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    assert not Path(url).exists()  # nothing was created


def test_a_missing_database_is_said_before_serving(tmp_path: Path) -> None:
    r = iolens("web", "--db", str(tmp_path / "missing.db"), env=iolens_env(), timeout=60)
    assert r.returncode == 2 and "no database at" in r.stderr


def test_users_see_their_own_jobs_and_staff_see_all(seeded: Seeded, tmp_path: Path) -> None:
    ta, tb, ts = token(seeded.url, USER_A), token(seeded.url, USER_B), token(seeded.url, "boss", staff=True)
    with portal(seeded.url, log_dir=tmp_path) as srv:
        status, headers, body = fetch(srv.base + "/jobs", ta)
        assert status == 200 and _job_links(body) == set(seeded.jobs[USER_A])
        status, headers, body = fetch(srv.base + "/jobs", tb)
        assert status == 200 and _job_links(body) == set(seeded.jobs[USER_B])
        status, _, body = fetch(srv.base + "/jobs", ts)
        assert _job_links(body) == set(seeded.jobs[USER_A]) | set(seeded.jobs[USER_B])
        # staff filter by user
        _, _, body = fetch(srv.base + "/jobs?user=" + USER_B, ts)
        assert _job_links(body) == set(seeded.jobs[USER_B])
        # A user asking for staff pages gets the same 404 as for nothing
        for path in ("/systems", "/monitor", "/survey", "/top", "/compare", "/live"):
            status, _, body = fetch(srv.base + path, ta)
            assert status == 404, path
        status, _, body404 = fetch(srv.base + "/no-such-page", ta)
        assert status == 404 and "No such page" in body404
        # security headers on every answer, errors too; no caching of pages
        for path in ("/jobs", "/no-such-page"):
            _, headers, _ = fetch(srv.base + path, ta)
            h = {k.lower(): v for k, v in headers.items()}
            assert "script-src 'self'" in h["content-security-policy"]
            assert h["x-content-type-options"] == "nosniff" and h["cache-control"] == "no-store"
        status, headers, js = fetch(srv.base + "/static/plotly.min.js")
        assert status == 200 and "plotly" in js[:2000].lower() and "max-age" in headers["cache-control"]
        assert fetch(srv.base + "/static/../app.py")[0] == 404
        assert fetch(srv.base + "/static/nothing.js")[0] == 404


def test_sign_in_with_a_token_needs_the_form_token_and_ends_with_revocation(
    seeded: Seeded, tmp_path: Path
) -> None:
    t = token(seeded.url, USER_A)
    with portal(seeded.url, log_dir=tmp_path) as srv:
        # nobody signed in: a browser is sent to the sign-in page, a script gets 401
        assert fetch(srv.base + "/jobs", headers={"Accept": "text/html"})[0] == 303
        assert fetch(srv.base + "/jobs")[0] == 401
        status, headers, body = fetch(srv.base + "/login")
        assert status == 200
        cookie = headers["set-cookie"].split(";")[0]
        csrf = re.search(r'name="csrf" value="([^"]+)"', body)
        assert csrf
        form = {"token": t, "csrf": csrf.group(1)}

        def post(fields: dict[str, str], hdrs: dict[str, str]) -> tuple[int, dict[str, str], str]:
            return fetch(srv.base + "/login", headers=hdrs, data=urllib.parse.urlencode(fields).encode())

        # no form token, a wrong one, or another site's Origin: refused
        assert post({"token": t}, {"Cookie": cookie})[0] == 403
        assert post({**form, "csrf": "x" * 43}, {"Cookie": cookie})[0] == 403
        assert post(form, {"Cookie": cookie, "Origin": "http://evil.example"})[0] == 403
        assert post(form, {"Cookie": cookie, "Origin": "null"})[0] == 403
        # a wrong token
        status, _, body = post({**form, "token": "iol_wrong"}, {"Cookie": cookie})
        assert status == 401 and "Unknown or revoked token" in body
        status, headers, _ = post(form, {"Cookie": cookie, "Origin": srv.base})
        assert status == 303
        session = headers["set-cookie"].split(";")[0]
        assert "HttpOnly" in headers["set-cookie"] and "SameSite=strict" in headers["set-cookie"]
        status, _, body = fetch(srv.base + "/jobs", headers={"Cookie": session})
        assert status == 200 and _job_links(body) == set(seeded.jobs[USER_A])
        # a forged session (another user's name, same signature) is nobody
        forged = session.replace("iolens_session=", "iolens_session=x")
        assert fetch(srv.base + "/jobs", headers={"Cookie": forged})[0] == 401
        # sign-out needs the form token too
        assert fetch(srv.base + "/logout", headers={"Cookie": session}, data=b"")[0] == 403
        iolens("web", "token", "revoke", "--user", USER_A, "--db", seeded.url, env=iolens_env())
        assert fetch(srv.base + "/jobs", headers={"Cookie": session})[0] == 401


def test_proxy_mode_believes_the_header_only_from_the_proxy(seeded: Seeded, tmp_path: Path) -> None:
    with portal(seeded.url, "--auth", "proxy", "--trusted-proxy", "10.9.8.7", log_dir=tmp_path) as srv:
        status, _, body = fetch(srv.base + "/jobs", headers={"X-Forwarded-User": USER_A})
        assert status == 403 and "only from the configured proxy" in body
        # X-Forwarded-For does not make a client the proxy
        status, _, _ = fetch(
            srv.base + "/jobs", headers={"X-Forwarded-User": USER_A, "X-Forwarded-For": "10.9.8.7"}
        )
        assert status == 403
    args = ("--auth", "proxy", "--trusted-proxy", "127.0.0.0/8", "--staff-user", "boss")
    with portal(seeded.url, *args, log_dir=tmp_path) as srv:
        status, _, body = fetch(srv.base + "/jobs", headers={"X-Forwarded-User": USER_B})
        assert status == 200 and _job_links(body) == set(seeded.jobs[USER_B])
        assert fetch(srv.base + "/jobs")[0] == 401
        assert fetch(srv.base + "/jobs", headers={"X-Forwarded-User": "a<b"})[0] == 400
        status, _, body = fetch(srv.base + "/jobs", headers={"X-Forwarded-User": "boss"})
        assert status == 200 and _job_links(body) == set(seeded.jobs[USER_A]) | set(seeded.jobs[USER_B])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_signal_stops_the_portal_and_says_so(
    seeded: Seeded, tmp_path: Path, sig: signal.Signals, workers: str
) -> None:
    with portal(seeded.url, "--workers", workers, log_dir=tmp_path) as srv:
        srv.proc.send_signal(sig)
        assert srv.proc.wait(timeout=30) == 128 + sig
    text = srv.log.read_text()
    assert f"stopped by {sig.name}" in text and "Traceback" not in text


def test_binds_to_loopback_by_default(seeded: Seeded, tmp_path: Path) -> None:
    with portal(seeded.url, log_dir=tmp_path) as srv:
        assert fetch(srv.base + "/healthz")[0] == 200
    assert "http://127.0.0.1:" in srv.log.read_text()


def test_a_darshan_job_stored_by_uid_is_its_users(tmp_path: Path) -> None:
    """A Darshan log names its user by uid only (stored as `uid N`, the same on any machine): the portal
    shows it to the user with that uid here, and to nobody else."""
    import pwd

    from iolens.store.records import ProfileRecord
    from iolens.store.store import Store

    url = str(tmp_path / "d.db")
    with Store.open(url) as store:
        uid_a = pwd.getpwnam(USER_A).pw_uid
        record = ProfileRecord(uid="d1", origin="darshan", summary={}, user_name=f"uid {uid_a}")
        mine = store.put_profile(record)
        store.put_profile(ProfileRecord(uid="d2", origin="darshan", summary={}, user_name="uid 4123456"))
    ta, tb = token(url, USER_A), token(url, USER_B)
    with portal(url, log_dir=tmp_path) as srv:
        assert _job_links(fetch(srv.base + "/jobs", ta)[2]) == {mine.id}
        assert _job_links(fetch(srv.base + "/jobs", tb)[2]) == set()
        assert fetch(srv.base + f"/jobs/{mine.id}", tb)[0] == 404
