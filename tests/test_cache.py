"""The cache of generated modules keeps the most recently used, within a bound."""
import os
import subprocess
import sys
import time

from kernels.cache import GENERATED_PREFIX, cache_entries, prune_cache
from kernels.derived.codegen import load_module


def fake_module(directory, name, size, used):
    source = directory / f"{GENERATED_PREFIX}{name}.py"
    source.write_text("#" * size)
    compiled = directory / "__pycache__" / f"{GENERATED_PREFIX}{name}.f-1.py311.nbi"
    compiled.parent.mkdir(exist_ok=True)
    compiled.write_bytes(b"\0" * size)
    os.utime(source, (used, used))
    return source, compiled


def test_prune_removes_the_least_recently_used_first(tmp_path):
    now = time.time()
    old = fake_module(tmp_path, "old", 1000, now - 300)
    middle = fake_module(tmp_path, "middle", 1000, now - 200)
    new = fake_module(tmp_path, "new", 1000, now - 100)
    assert [e.name for e in cache_entries(tmp_path)] == [
        f"{GENERATED_PREFIX}{n}" for n in ("old", "middle", "new")]
    # 6,000 bytes in all (each module 2 x 1,000); keep at most 4,500: the
    # oldest goes, with numba's compiled code for it.
    assert prune_cache(tmp_path, limit=4500) == 1
    assert not any(f.exists() for f in old)
    assert all(f.exists() for f in middle + new)
    # The module in use is never removed, even if it is the oldest.
    assert prune_cache(tmp_path, limit=0, keep=f"{GENERATED_PREFIX}middle") == 1
    assert all(f.exists() for f in middle) and not any(f.exists() for f in new)


def test_loading_a_module_marks_it_used(tmp_path, monkeypatch):
    from kernels.sources.loader import _builtin_plan
    monkeypatch.setenv("THREADMAP_CACHE_DIR", str(tmp_path))
    plan = _builtin_plan("naive-2d")
    first = load_module(plan, "cuda", "float32").path
    os.utime(first, (1, 1))
    load_module(plan, "cuda", "float32")
    assert first.stat().st_mtime > 1


def test_threadmap_cache_clear_empties_it(tmp_path):
    cache = tmp_path / "cache"
    (cache / "generated").mkdir(parents=True)
    fake_module(cache / "generated", "x", 10, time.time())
    env = dict(os.environ, THREADMAP_CACHE_DIR=str(cache))
    shown = subprocess.run([sys.executable, "-m", "app.launcher", "cache"], env=env,
                           capture_output=True, text=True, check=True).stdout
    assert "1 generated module," in shown
    cleared = subprocess.run([sys.executable, "-m", "app.launcher", "cache", "--clear"], env=env,
                             capture_output=True, text=True, check=True).stdout
    assert cleared.startswith("removed 2 files")
    assert not any(p.is_file() for p in (cache / "generated").rglob("*"))


def fake_kernel_folder(root, name, size, used):
    folder = root / name
    (folder / "numba").mkdir(parents=True)
    (folder / "numba" / "code.nbc").write_bytes(b"\0" * size)
    os.utime(folder, (used, used))
    return folder


def test_sandboxed_kernels_are_pruned_for_a_new_kernel_and_otherwise_every_few_minutes(
        tmp_path, monkeypatch):
    from kernels import cache

    monkeypatch.setattr(cache, "SANDBOX_LIMIT_BYTES", 2500)
    now = time.time()
    old = fake_kernel_folder(tmp_path, "old", 1000, now - 300)
    middle = fake_kernel_folder(tmp_path, "middle", 1000, now - 200)
    warm = fake_kernel_folder(tmp_path, "warm", 1000, now - 100)
    # The first pruning (no stamp yet): 3,000 bytes past 2,500, the oldest goes.
    cache.prune_sandbox_caches(keep=warm)
    assert not old.exists() and middle.exists() and warm.exists()
    # A warm kernel's rerun soon after does not measure again, though the
    # folders are past the limit again.
    fake_kernel_folder(tmp_path, "older", 1000, now - 400)
    cache.prune_sandbox_caches(keep=warm)
    assert (tmp_path / "older").exists()
    # A new kernel (its folder still empty) does: the least recently used goes.
    new = tmp_path / "new"
    new.mkdir()
    cache.prune_sandbox_caches(keep=new)
    assert not (tmp_path / "older").exists() and middle.exists() and new.exists()
    # And so does a rerun once the last pruning is old; the kept one stays,
    # even when it is the oldest.
    fake_kernel_folder(tmp_path, "another", 1000, now - 50)
    stamp_time = now - cache.SANDBOX_PRUNE_INTERVAL_S - 1
    os.utime(tmp_path / ".last-pruned", (stamp_time, stamp_time))
    os.utime(warm, (now - 500, now - 500))
    cache.prune_sandbox_caches(keep=warm)
    assert warm.exists() and not middle.exists() and (tmp_path / "another").exists()
