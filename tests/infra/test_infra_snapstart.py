"""SnapStart on the API function and the WebSocket function (infra/function_factory.py,
docs/performance.md "SnapStart"): snapshots of published versions, an alias on the newest, and
API Gateway invoking the alias, never the unpublished ``$LATEST`` (which SnapStart never runs)."""

from __future__ import annotations

import json

import pytest

from infra.function_factory import LIVE_ALIAS
from tests.infra.test_infra_resources import of_type

pytestmark = pytest.mark.infra
SNAP_STARTED = ("api", "stream")


def _integration_uris(synth, api) -> set[str]:
    return {
        json.dumps(integration["Properties"]["IntegrationUri"])
        for integration in of_type(synth, "AWS::ApiGatewayV2::Integration").values()
        if integration["Properties"]["ApiId"] == synth.ref(api)
    }


@pytest.mark.parametrize("name", SNAP_STARTED)
def test_the_function_snapshots_its_published_versions_behind_an_alias(dev, name):
    service_function = getattr(dev.stack.functions, name)

    assert dev.props(service_function.function)["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    alias = dev.props(service_function.invocable)
    assert alias["Name"] == LIVE_ALIAS
    assert alias["FunctionName"] == dev.ref(service_function.function)
    # The alias names a published version of this function (a new one at each changed deploy).
    version_id = alias["FunctionVersion"]["Fn::GetAtt"][0]
    version = dev.template.to_json()["Resources"][version_id]
    assert version["Type"] == "AWS::Lambda::Version"
    assert version["Properties"]["FunctionName"] == dev.ref(service_function.function)


def test_no_other_function_snapshots(dev):
    snap_started = {dev.logical_id(getattr(dev.stack.functions, name).function) for name in SNAP_STARTED}

    functions = of_type(dev, "AWS::Lambda::Function")

    assert {logical_id for logical_id, function in functions.items() if "SnapStart" in function["Properties"]} == (
        snap_started
    )


@pytest.mark.parametrize("synth_name", ["dev", "prod"])
def test_the_http_api_and_the_websocket_api_invoke_the_aliases(request, synth_name):
    synth = request.getfixturevalue(synth_name)
    api_alias, stream_alias = (
        synth.logical_id(getattr(synth.stack.functions, name).invocable) for name in SNAP_STARTED
    )

    (http_uri,) = _integration_uris(synth, synth.stack.api.http_api)
    (websocket_uri,) = _integration_uris(synth, synth.stack.push.websocket_api)

    assert api_alias in http_uri
    assert stream_alias in websocket_uri
    # API Gateway may invoke the aliases (the permissions name them, not the bare functions).
    permitted = {
        json.dumps(permission["Properties"]["FunctionName"])
        for permission in of_type(synth, "AWS::Lambda::Permission").values()
        if permission["Properties"]["Principal"] == "apigateway.amazonaws.com"
    }
    assert any(api_alias in name for name in permitted)
    assert any(stream_alias in name for name in permitted)
    for name in SNAP_STARTED:
        function_id = synth.logical_id(getattr(synth.stack.functions, name).function)
        assert not any(function_id in target for target in permitted), f"API Gateway invokes {name}'s $LATEST"


@pytest.mark.parametrize("name", SNAP_STARTED)
def test_a_replaced_version_is_deleted_so_one_snapshot_is_cached(dev, name):
    service_function = getattr(dev.stack.functions, name)
    version_id = dev.props(service_function.invocable)["FunctionVersion"]["Fn::GetAtt"][0]

    version = dev.template.to_json()["Resources"][version_id]

    assert version["DeletionPolicy"] == "Delete"
    assert version["UpdateReplacePolicy"] == "Delete"
