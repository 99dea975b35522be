"""Delivery destinations (docs/destinations.md): a tenant's S3 buckets and SFTP servers that
finished files are delivered to.

Pure modules: :mod:`.model` (the destination, its validation, who may manage and use it),
:mod:`.secrets` (what it keeps in Secrets Manager) and :mod:`.keys` (the key pair, ExternalId and
fingerprints the service generates). The stores are behind :mod:`.ports`.
"""
