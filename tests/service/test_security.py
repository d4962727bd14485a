"""Access control and hostile input against the running service (SQLite and PostgreSQL): every
request is answered with the right status code, and a refused request stores nothing."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa
import yaml

from robocal.fleet.store import open_store

PROBLEM = yaml.safe_dump({"robot": "robot.urdf", "measurements": [{"name": "tool", "type": "markers", "data": "markers.csv", "link": "tool"}]})
INJECTIONS = ["'; DROP TABLE units; --", "x' OR '1'='1", 'a"; DELETE FROM sessions; --', "1; SELECT pg_sleep(5)--"]
TABLES = ("units", "sessions", "session_files", "blobs", "jobs", "models", "stations", "tokens")


def files(extra: bytes = b"", **more) -> list:
    entries = {"problem.yaml": PROBLEM.encode(), "markers.csv": b"q1,x,y,z\n0,1,2,3\n" + extra} | more
    return [("files", (name, content, "application/octet-stream")) for name, content in entries.items()]


def upload(client, serial="U-1", key=None, data=None, parts=None):
    headers = {} if key is None else {"Idempotency-Key": key}
    return client.post("/api/sessions", data={"serial": serial, "model": "arm6"} | (data or {}), files=parts or files(), headers=headers)


def counts(service) -> dict[str, int]:
    engine = open_store(service.db)
    with engine.connect() as c:
        tally = {t: c.scalar(sa.text(f"SELECT count(*) FROM {t}")) for t in TABLES}
    engine.dispose()
    return tally


def test_tokens_and_scopes(service):
    before = counts(service)
    bad = ["rc1_" + "A" * 43, "garbage", service.tokens["admin"][:-1] + ("B" if service.tokens["admin"][-1] != "B" else "C")]
    with service.client(None) as anonymous:
        assert anonymous.get("/api/units").status_code == 401
        assert upload(anonymous).status_code == 401
        for token in bad:
            assert anonymous.get("/api/units", headers={"Authorization": f"Bearer {token}"}).status_code == 401
        assert anonymous.get("/openapi.json").json()["paths"]["/api/sessions"]["post"]
    with service.client("expired") as expired:
        answer = expired.get("/api/units")
        assert answer.status_code == 401 and answer.json()["detail"] == "token expired"
    with service.client("station-a") as station, service.client("engineer") as engineer:
        assert station.get("/api/stations").status_code == 403
        assert station.post("/api/models", json={"name": "m", "urdf": "<robot/>"}).status_code == 403
        assert engineer.post("/api/tokens", json={"scope": "admin"}).status_code == 403
        assert engineer.post("/api/models", json={"name": "m", "urdf": "<robot/>"}).status_code == 403
        assert upload(engineer).status_code == 403  # only stations record sessions
    assert counts(service) == before


def test_station_reads_and_writes_only_its_own(service):
    with service.client("station-a") as a, service.client("station-b") as b, service.client("engineer") as engineer:
        created = upload(a, "U-A")
        assert created.status_code == 201, created.text
        session = created.json()["session"]
        before = counts(service)
        assert upload(b, "U-B", data={"station": "station-a"}).status_code == 403
        assert counts(service) == before
        assert "U-A" not in [u["serial"] for u in b.get("/api/units").json()]
        for path in ("/api/units/U-A", f"/api/sessions/{session}", f"/api/results/{session}", f"/api/results/{session}/urdf", f"/api/results/{session}/report"):
            assert b.get(path).status_code == 404, path
        assert session not in [s["session"] for s in b.get("/api/sessions").json()] + [j["session"] for j in b.get("/api/jobs").json()]
        assert b.post(f"/api/sessions/{session}/rerun").status_code == 403
        assert engineer.post(f"/api/sessions/{session}/rerun").status_code == 409  # still queued (no workers here)
        assert "U-A" in [u["serial"] for u in a.get("/api/units").json()]
        assert a.get(f"/api/sessions/{session}").json()["station"] == "station-a"
        assert "U-A" in [u["serial"] for u in engineer.get("/api/units").json()]
        every = {s["session"]: s for s in engineer.get("/api/sessions").json()}
        own = {s["session"] for s in b.get("/api/sessions").json()}
        assert own <= set(every) and session in every and session not in own


def test_idempotency_key(service):
    key, before = str(uuid.uuid4()), counts(service)["sessions"]
    with service.client("station-a") as a, service.client("station-b") as b:
        first, again = upload(a, key=key), upload(a, key=key)
        assert (first.status_code, again.status_code) == (201, 200)
        assert again.json() == first.json() | {"replayed": True}
        assert upload(a, key=key, parts=files(b"4,5,6,7\n")).status_code == 409  # the key names another upload
        assert upload(b, "U-2", key=key).status_code == 201  # keys are per station
    assert counts(service)["sessions"] == before + 2


@pytest.mark.parametrize(
    "name", ["../evil.csv", "../../etc/passwd", "/etc/passwd", "sub/markers.csv", "..\\evil.csv", ".hidden", "robot.urdf", "criteria.yaml"]
)
def test_file_names(service, name):
    before = counts(service)
    with service.client("station-a") as a:
        answer = upload(a, parts=files(**{name: b"x"}))
        assert answer.status_code == 422, (name, answer.text)
        traversal = yaml.safe_dump({"robot": "robot.urdf", "measurements": [{"name": "t", "data": name}]}).encode()
        assert upload(a, parts=files(**{"problem.yaml": traversal})).status_code == 422
    assert counts(service) == before


def test_oversized_and_malformed_uploads(service):
    before = counts(service)
    with service.client("station-a") as a:
        assert upload(a, parts=files(b"0" * 2**20)).status_code == 413  # the service's limit: 1 MiB
        assert a.post("/login", data={"token": "x" * 9 * 2**20}).status_code == 413  # 8 MiB for any other body
        assert a.post("/login", content=iter([b"token=x"]), headers={"Content-Type": "application/x-www-form-urlencoded"}).status_code == 411
        garbage = a.post("/api/sessions", content=b"--x\r\nnot a part", headers={"Content-Type": "multipart/form-data; boundary=x"})
        assert garbage.status_code in (400, 422), garbage.text
        for _ in range(20):  # every time: the refused chunked body is read before the answer, not reset with the connection
            chunked = a.post("/api/sessions", content=iter([b"--x\r\n"]), headers={"Content-Type": "multipart/form-data; boundary=x"})
            assert chunked.status_code == 411
        assert a.post("/api/sessions", data={"serial": "U-1", "model": "arm6"}).status_code == 422  # no files
        cases = {
            "no problem": [("files", ("markers.csv", b"1,2,3", "text/csv"))],
            "problem not YAML": files(**{"problem.yaml": b"robot: [unclosed"}),
            "problem not UTF-8": files(**{"problem.yaml": b"\xff\xfe\x00"}),
            "problem a list": files(**{"problem.yaml": b"- 1\n- 2\n"}),
            "other robot": files(**{"problem.yaml": PROBLEM.replace("robot.urdf", "/etc/passwd").encode()}),
            "data missing": files(**{"problem.yaml": PROBLEM.replace("markers.csv", "other.csv").encode()}),
            "data a list": files(**{"problem.yaml": PROBLEM.replace("markers.csv", "[markers.csv]").encode()}),
            "data a mapping": files(**{"problem.yaml": PROBLEM.replace("markers.csv", "{file: markers.csv}").encode()}),
            "too many files": files(**{f"f{k}.csv": b"" for k in range(40)}),
        }
        for case, parts in cases.items():
            assert upload(a, parts=parts).status_code == 422, case
        for offset in ("nan", "inf", "1e9", "soon"):
            assert upload(a, data={"clock_offset": offset}).status_code == 422, offset
        assert upload(a, data={"model": "no-such-model"}).status_code == 422
    assert counts(service) == before


def test_non_finite_numbers_in_a_json_body(service):
    """Python's JSON parser takes NaN, Infinity and 1e400 (inf); the 422 answer echoing them is JSON still."""
    before = counts(service)
    with service.client("admin") as admin:
        for number in ("NaN", "Infinity", "-Infinity", "1e400"):
            body = f'{{"scope": "engineer", "expires_in": {number}}}'.encode()
            answer = admin.post("/api/tokens", content=body, headers={"Content-Type": "application/json"})
            assert answer.status_code == 422 and answer.json()["detail"][0]["loc"] == ["body", "expires_in"], (number, answer.text)
    assert counts(service) == before


def test_sql_injection_in_every_text_field(service):
    before = counts(service)
    with service.client("station-a") as a, service.client("admin") as admin, service.client("engineer") as engineer:
        for text in INJECTIONS:
            assert upload(a, serial=text).status_code == 422
            assert upload(a, data={"model": text}).status_code == 422
            assert upload(a, data={"station": text}).status_code == 403
            assert upload(a, key=text).status_code == 422
            assert upload(a, parts=files(**{text: b"x"})).status_code == 422
            assert admin.post("/api/models", json={"name": text, "urdf": "<robot/>"}).status_code == 422
            assert admin.post("/api/tokens", json={"scope": text}).status_code == 422
            assert admin.post("/api/tokens", json={"scope": "station", "station": text}).status_code == 422
            assert admin.put(f"/api/models/{text}/criteria", json={"criteria": ""}).status_code in (404, 422)
            assert engineer.get("/api/units/" + text).status_code in (404, 422)
            assert engineer.get("/api/jobs", params={"status": text}).status_code == 422
            assert engineer.get("/api/units", headers={"Authorization": f"Bearer {text}"}).status_code == 401
            assert admin.put("/api/models/arm6/criteria", json={"criteria": text}).status_code == 422
            assert admin.post("/api/models", json={"name": "m2", "urdf": text}).status_code == 422
            assert a.post("/login", data={"token": text}).status_code == 401
        for path in ("/api/sessions/99999999999", "/api/results/-1", "/api/results/2147483648/urdf"):  # beyond a 32-bit id
            assert engineer.get(path).status_code == 422, path
        assert engineer.get("/api/units", headers={"Authorization": "Bearer rc999999999999_" + "A" * 43}).status_code == 401
        assert upload(a, serial="U\x00-1").status_code == 422 and engineer.get("/api/units/U%00-1").status_code == 422
        assert admin.put("/api/models/arm6/criteria", json={"criteria": "sigmas: 3\x00"}).status_code == 422
    assert counts(service) == before  # every table there, nothing added


def test_dashboard_needs_a_token(service):
    with service.client(None) as browser:
        assert browser.get("/").status_code == 303 and browser.get("/").headers["location"] == "/login"
        assert browser.get("/units/U-A").status_code == 303
        assert browser.post("/login", data={"token": "rc1_" + "A" * 43}).status_code == 401
        signed = browser.post("/login", data={"token": service.tokens["expired"]})
        assert signed.status_code == 401 and "token expired" in signed.text
        assert browser.get("/").status_code == 303  # no cookie was set
        assert browser.post("/login", data={"token": service.tokens["engineer"]}).status_code == 303
        page = browser.get("/")
        assert page.status_code == 200 and "default-src 'none'" in page.headers["content-security-policy"]
        assert "<script" not in page.text
