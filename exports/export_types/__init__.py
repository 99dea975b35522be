"""Export types: the registry of what this deployment can export, and how it is built from the
declaration file (loader, file model, builder) over the registered source kinds."""
