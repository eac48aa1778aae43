import json
from pathlib import Path


class _Model:
    def __init__(self, **kw):
        self.__dict__.update(kw)

    def model_copy(self, update=None, deep=False):
        d = dict(self.__dict__)
        d.update(update or {})
        return type(self)(**d)


class BackendConfig(_Model):
    pass


class RuntimeSection(_Model):
    pass


class DeploymentConfig(_Model):
    pass


def load_deployment(source):
    """JSON stand-in for the YAML loader: {"kind","url","headed"}."""
    from openadapt_flow import CANARY

    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError("deployment config missing " + CANARY)
    try:
        data = json.loads(path.read_text())
    except Exception as e:
        raise ValueError("bad deployment " + CANARY) from e
    return DeploymentConfig(
        name="stub",
        backend=BackendConfig(kind=data.get("kind", "web"), url=data.get("url"), headed=bool(data.get("headed"))),
        runtime=RuntimeSection(allow_model_grounding=bool(data.get("allow_model_grounding"))),
    )
