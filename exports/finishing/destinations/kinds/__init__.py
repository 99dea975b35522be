"""The kinds of destination, one module each (:mod:`.s3`, :mod:`.sftp`): each holds its models,
its customer's sentences and its adapter, against the contract of
:mod:`exports.finishing.destinations.kind`; :mod:`exports.finishing.destinations.registry` is
the only module that imports them (docs/how-to/add-a-destination-kind.md)."""
