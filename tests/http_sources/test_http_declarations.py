"""What the loader refuses in an HTTP source or type, naming the key; and what a deployment
makes of a source whose base URL is not on a declared host."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from exports.adapters.clients import ClientFactory
from exports.declared.build import build_export_types
from exports.declared.loader import DeclarationError, load_declarations
from exports.export_types.base import SourceLimit
from exports.sources.kind import SourceReaders
from exports.sources.registry import source_kind

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE = """
[sources.crm]
kind = "http"
{source}
"""
TYPE = """
[types.people]
description = "people"
source = "crm"
{type}
[types.people.http]
{http}
[types.people.caller]
tenant = {{ claim = "custom:tenant_id" }}
[types.people.parameters.region]
type = "string"
required = false
[[types.people.columns]]
name = "person_id"
attribute = "id"
"""
GOOD_SOURCE = 'base_url = "https://crm.internal.example/api"'
GOOD_HTTP = 'path = "/tenants/{tenant}/people"\nquery = { region = "{region}" }'


def write(folder: Path, source: str = GOOD_SOURCE, http: str = GOOD_HTTP, type_keys: str = "") -> Path:
    path = folder / "exports.toml"
    text = SOURCE.format(source=source) + TYPE.format(type=type_keys, http=http)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_declaration_loads(tmp_path: Path) -> None:
    loaded = load_declarations(write(tmp_path))

    assert list(loaded.file.types) == ["people"]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (f'{GOOD_SOURCE}\nbase_url_env = "CRM_URL"', "sources.crm: declare exactly one of base_url and base_url_env"),
        ("", "sources.crm: declare exactly one of base_url and base_url_env"),
        ('base_url_env = "CRM_URL"', "sources.crm: hosts: is needed with base_url_env"),
        ('base_url = "ftp://crm.internal.example"', "sources.crm: http.base_url: String should match pattern"),
        (
            'base_url = "https://user:pw@crm.internal.example"',
            "sources.crm: http.base_url: String should match pattern",
        ),
        (f'{GOOD_SOURCE}\nhosts = ["crm.internal.example/path"]', "sources.crm: http.hosts.0: String should match"),
        (f'{GOOD_SOURCE}\nauth = {{ type = "basic" }}', "sources.crm: http.auth: Input tag 'basic' found"),
        (f'{GOOD_SOURCE}\nauth = {{ type = "bearer" }}', "sources.crm: http.auth.bearer.secret_arn: Field required"),
        (f"{GOOD_SOURCE}\ntimeout_sec = 0", "sources.crm: http.timeout_sec: Input should be greater than 0"),
        (
            f'{GOOD_SOURCE}\nhosts = ["crm.internal.example", "169.254.169.254"]',
            "sources.crm: hosts.1: 169.254.169.254 is the instance metadata service's address, never a data source",
        ),
        ('base_url = "http://169.254.170.2/v2"', "sources.crm: base_url: 169.254.170.2 is the instance metadata"),
        ('base_url_env = "U"\nhosts = ["[fd00:ec2::254]"]', "sources.crm: hosts.0: fd00:ec2::254 is the instance"),
    ],
)
def test_a_source_is_refused_naming_the_key(tmp_path: Path, source: str, message: str) -> None:
    with pytest.raises(DeclarationError, match=re.escape(message)):
        load_declarations(write(tmp_path, source=source))


@pytest.mark.parametrize(
    ("http", "type_keys", "message"),
    [
        ('path = "/people/{who}"', "", "types.people: http.path: {who} is not a declared parameter or string caller"),
        ('path = "/people/{region}"', "", "types.people: http.path: {region} is optional: the path needs a value"),
        ('path = "people"', "", "types.people: http.path: String should match pattern '^/[^?#]*$'"),
        (
            'path = "/t/{tenant}"\npagination = { style = "cursor", cursor_field = "/next" }',
            "",
            "types.people: http.pagination.cursor_param: is needed with style = 'cursor'",
        ),
        (
            'path = "/t/{tenant}"\npagination = { style = "page", page_param = "p", next_field = "/n" }',
            "",
            "types.people: http.pagination.next_field: is for style = 'next_link'",
        ),
        (
            'path = "/t/{tenant}"\nquery = { p = "1" }\npagination = { style = "page", page_param = "p" }',
            "",
            "types.people: http.query: 'p' is the pagination's parameter: the pages set it",
        ),
        ('path = "/t/{tenant}"\nrows = "data"', "", "types.people: http.rows: String should match pattern"),
        ('path = "/everyone"', "", "types.people: caller.tenant: is bound but the request's path or query never"),
        (GOOD_HTTP, 'order_key = ["person_id"]', "types.people: order_key"),
    ],
)
def test_a_type_is_refused_naming_the_key(tmp_path: Path, http: str, type_keys: str, message: str) -> None:
    with pytest.raises(DeclarationError, match=re.escape(message)):
        load_declarations(write(tmp_path, http=http, type_keys=type_keys))


def test_a_base_url_from_the_environment_must_be_on_a_declared_host(tmp_path: Path) -> None:
    path = write(tmp_path, source='base_url_env = "CRM_URL"\nhosts = ["crm.internal.example"]')
    declarations = load_declarations(path)

    def built(url: str | None) -> dict[str, str]:
        environ = {} if url is None else {"CRM_URL": url}
        return build_export_types(declarations, SourceReaders(client=ClientFactory(), environ=environ)).left_out

    assert built("https://crm.internal.example:8443/api") == {}
    assert built(None) == {"people": "data source 'crm' reads its base URL from CRM_URL, which is not set"}
    assert built("http://169.254.169.254/latest") == {
        "people": "data source 'crm': the base URL in CRM_URL is not on a host its declaration names"
    }


@pytest.mark.parametrize(
    ("arn", "granted"),
    [
        ("arn:aws:secretsmanager:eu-west-1:123456789012:secret:crm-token-AbCdEf", "crm-token-AbCdEf"),
        # A partial ARN (GetSecretValue takes it): IAM matches the suffix Secrets Manager adds.
        ("arn:aws:secretsmanager:eu-west-1:123456789012:secret:crm-token", "crm-token-??????"),
    ],
)
def test_the_worker_is_granted_the_secret_of_its_token(tmp_path: Path, arn: str, granted: str) -> None:
    path = write(tmp_path, source=f'{GOOD_SOURCE}\nauth = {{ type = "bearer", secret_arn = "{arn}" }}')
    source = load_declarations(path).file.sources["crm"]

    assert source_kind(source).secret_arns(source) == [
        f"arn:aws:secretsmanager:eu-west-1:123456789012:secret:{granted}"
    ]


def test_the_shipped_type_is_limited_per_source_and_per_tenant_hot_key() -> None:
    shipped = load_declarations(REPO_ROOT / "exports.toml")
    readers = SourceReaders(client=ClientFactory(), environ={"EXPORTS_DEMO_API_URL": "http://127.0.0.1:9"})
    built = {each.name: each for each in build_export_types(shipped, readers).types}
    customers = built["customers_api"]

    filters = customers.parse_filters({"country": "DE"}, {"tenant_id": "acme"})

    assert customers.source_limit() == SourceLimit("customer_service", 4)
    assert customers.hot_key(filters) == "customers_api:DE:acme"


def test_the_documented_declaration_is_the_shipped_one(tmp_path: Path) -> None:
    docs = (REPO_ROOT / "docs" / "export-your-own-data.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- example: http-declaration -->\n```toml\n(.*?)```", docs, re.DOTALL)
    assert match is not None
    documented = tomllib.loads(match.group(1))
    shipped = tomllib.loads((REPO_ROOT / "exports.toml").read_text(encoding="utf-8"))

    (tmp_path / "exports.toml").write_text(match.group(1), encoding="utf-8")
    load_declarations(tmp_path / "exports.toml")
    source = shipped["sources"]["customer_service"]
    assert documented["sources"]["customer_service"].items() <= source.items()
    documented_type, shipped_type = documented["types"]["customers_api"], shipped["types"]["customers_api"]
    for key in ("source", "hot_key", "http", "caller"):
        assert documented_type[key] == shipped_type[key]
    assert documented_type["parameters"]["country"].items() <= shipped_type["parameters"]["country"].items()
    shipped_columns = {column["name"]: column for column in shipped_type["columns"]}
    for column in documented_type["columns"]:
        assert column.items() <= shipped_columns[column["name"]].items()


def test_a_sigv4_source_signs_for_the_declared_or_the_deployments_region(tmp_path: Path) -> None:
    auth = '{ type = "sigv4", service = "execute-api", api_id = "a1b2c3d4e5", stage = "prod" }'
    declarations = load_declarations(write(tmp_path, source=f"{GOOD_SOURCE}\nauth = {auth}"))

    def left_out(environ: dict[str, str]) -> dict[str, str]:
        return build_export_types(declarations, SourceReaders(client=ClientFactory(), environ=environ)).left_out

    assert left_out({"AWS_REGION": "eu-west-1"}) == {}
    assert left_out({}) == {"people": "data source 'crm' signs with SigV4 but no region is known: declare auth.region"}
