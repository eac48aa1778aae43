import hashlib
from pathlib import Path


def _is_run_dir(path):
    report = path / "report.json"
    return not path.is_symlink() and path.is_dir() and report.is_file() and not report.is_symlink()


def resolve_scanned_dir(root, entry_id, predicate):
    root = Path(root)
    for d in sorted(root.iterdir()):
        if d.is_symlink() or not predicate(d):
            continue
        rel = d.relative_to(root).as_posix()
        if hashlib.sha256(rel.encode()).hexdigest()[:24] == entry_id:
            return d.resolve()
    return None
