"""STUB openadapt_flow.backends: the two backend entry points the helper's
authoring session is built with (playwright_backend.PlaywrightBackend.launch,
factory.build_backend), shaped like Flow's (see flowhelper.AuthoringAPI for
the provenance). OPENADAPT_STUBFLOW_BACKENDS=absent makes both modules
absent. Never embedded in the binary."""
