"""What a run ran on (docs/running.md, "Provenance of a run"): the record, its table, the rule's rerun
trigger and the warnings when recorded and installed versions differ."""

import json
import logging
import platform
import subprocess
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from helpers.paths import REPO

import helixclock
from helixclock.environment.lock import LOCK, locked
from helixclock.environment.provenance import (
    changed_records,
    differences,
    environment,
    fingerprint,
    git_commit,
    installed_metadata,
    lock_digests,
    package_versions,
    provenance_table,
    source,
    warn_if_changed,
    write_provenance,
)


def _installed():
    return {"python": platform.python_version(), "packages": package_versions()}


def git(*args, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def test_the_fingerprint_reads_python_the_commit_the_packages_and_the_lock():
    fp = fingerprint(REPO)
    head = git("rev-parse", "HEAD", cwd=REPO)
    assert fp["commit"] == head and len(head) == 40 and fp["python"] == platform.python_version()
    assert fp["lock"] == lock_digests(REPO) and set(fp["lock"]) == {"lock", "torch", "gguf"}
    assert fingerprint(REPO) == fp  # nothing changed: the same params, no rerun
    # the packages: every installed distribution's metadata folder, name and version
    names = installed_metadata()
    assert f"numpy-{np.__version__}.dist-info" in names and any(n.startswith("torch-") for n in names)
    assert package_versions(["no-such-package-helixclock"]) == {"no-such-package-helixclock": None}
    assert source(Path("/")) == {"version": helixclock.__version__, "commit": None, "dirty": None}


def test_installed_metadata_is_read_from_folder_listings(tmp_path):
    site, other = tmp_path / "site", tmp_path / "other"
    for folder, names in ((site, ["numpy-2.4.6.dist-info", "numpy", "old-1.0.egg-info"]), (other, ["a-1.dist-info"])):
        for name in names:
            (folder / name).mkdir(parents=True)
    paths = [str(site), str(other), str(tmp_path / "absent"), str(tmp_path / "site.zip")]
    assert installed_metadata(paths) == ["a-1.dist-info", "numpy-2.4.6.dist-info", "old-1.0.egg-info"]
    (site / "numpy-2.4.6.dist-info").rename(site / "numpy-2.4.7.dist-info")  # an upgrade
    assert installed_metadata(paths) == ["a-1.dist-info", "numpy-2.4.7.dist-info", "old-1.0.egg-info"]


def test_the_commit_is_read_from_gits_files(tmp_path):
    """git_commit against `git rev-parse HEAD`: a branch as a loose ref, then packed, a detached
    HEAD, a worktree (its HEAD in its own folder, its refs in the common one); None outside."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    for n in (1, 2):
        (repo / "f.txt").write_text(str(n))
        git("add", "f.txt", cwd=repo)
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", str(n), cwd=repo)
    assert git_commit(repo) == git("rev-parse", "HEAD", cwd=repo)  # refs/heads/main, a loose ref
    git("pack-refs", "--all", cwd=repo)
    assert not (repo / ".git/refs/heads/main").exists()
    assert git_commit(repo) == git("rev-parse", "HEAD", cwd=repo)  # packed-refs
    first = git("rev-parse", "HEAD~1", cwd=repo)
    git("worktree", "add", "-q", "-b", "other", str(tmp_path / "wt"), first, cwd=repo)
    assert (tmp_path / "wt" / ".git").is_file() and git_commit(tmp_path / "wt") == first
    git("checkout", "-q", "--detach", first, cwd=repo)
    assert git_commit(repo) == first
    assert git_commit(tmp_path / "elsewhere") is None


def test_a_card_records_what_its_jobs_run_on():
    env = environment()
    assert env["torch_cuda"] == torch.version.cuda and env["packages"]["transformers"] == version("transformers")
    assert differences(env, _installed()) == []


def test_differences_name_each_package_and_python():
    recorded = {"python": "3.10.1", "packages": {"numpy": "1.26.0", "torch": version("torch")}}
    assert differences(recorded, _installed()) == [
        f"python 3.10.1 (recorded) vs {platform.python_version()} (installed)",
        f"numpy 1.26.0 (recorded) vs {np.__version__} (installed)",
    ]


def test_a_model_job_warns_when_its_card_recorded_other_versions(caplog):
    card = {"environment": {**_installed(), "packages": {**package_versions(), "transformers": "4.0.0"}}}
    with caplog.at_level(logging.WARNING, logger="helixclock"):
        changed = warn_if_changed(card, "accuracy of toy-gptj")
    assert changed == [f"transformers 4.0.0 (recorded) vs {version('transformers')} (installed)"]
    assert "accuracy of toy-gptj: this job runs on other versions than its model card recorded" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="helixclock"):
        assert warn_if_changed({"environment": environment()}, "x") == []
        assert warn_if_changed({"model": "a card made before cards recorded versions"}, "x") == []
    assert caplog.text == ""


def test_a_run_warns_about_each_record_that_differs(tmp_path):
    record, same, old = tmp_path / "provenance.json", tmp_path / "same.json", tmp_path / "model.json"
    record.write_text(json.dumps({**_installed(), "packages": {**package_versions(), "nnsight": "0.7.0"}}))
    same.write_text(json.dumps({"environment": _installed()}))
    old.write_text(json.dumps({"environment": {**_installed(), "packages": {"snakemake": "8.0.0"}}}))
    lines = changed_records({"a": same, "b": old, "c": tmp_path / "absent.json"}, record)
    assert lines == [
        f"{record}: nnsight 0.7.0 (recorded) vs {version('nnsight')} (installed)",
        f"{old}: snakemake 8.0.0 (recorded) vs {version('snakemake')} (installed)",
    ]
    assert changed_records({}, tmp_path / "none.json") == []
    assert changed_records({"a": same, "b": old}) == lines[1:]  # the cards alone (the provenance job's)


def test_the_provenance_job_warns_about_each_card_that_differs(tmp_path, caplog, capfd):
    """The warning reaches the console as well as the job's log."""
    cards = {m: tmp_path / m / "model.json" for m in ("toy-gptj", "toy-llama")}
    for path in cards.values():
        path.parent.mkdir()
    cards["toy-gptj"].write_text(json.dumps({"environment": environment()}))
    older = {**environment(), "packages": {**package_versions(), "nnsight": "0.7.0"}}
    cards["toy-llama"].write_text(json.dumps({"environment": older}))
    outputs = [tmp_path / "provenance.json", tmp_path / "provenance.csv", tmp_path / "provenance.md"]
    with caplog.at_level(logging.WARNING, logger="helixclock"):
        write_provenance("cpu", REPO, cards, outputs)
    line = (
        f"helixclock: recorded versions differ from the installed ones, {cards['toy-llama']}: nnsight 0.7.0 "
        f"(recorded) vs {version('nnsight')} (installed); jobs that run now use the installed ones"
    )
    assert line in caplog.text and line in capfd.readouterr().err
    assert str(cards["toy-gptj"]) not in caplog.text


def test_the_record_and_its_table_hold_what_the_run_ran_on(tmp_path):
    cards = {"toy-gptj": tmp_path / "a.json", "toy-old": tmp_path / "b.json"}
    cards["toy-gptj"].write_text(json.dumps({"model": "toy-gptj", "environment": environment()}))
    cards["toy-old"].write_text(json.dumps({"model": "toy-old"}))
    outputs = [tmp_path / "provenance.json", tmp_path / "provenance.csv", tmp_path / "provenance.md"]
    record = write_provenance("auto", REPO, cards, outputs)
    assert json.loads(outputs[0].read_text()) == record
    assert record["helixclock"] == source(REPO) and record["packages"] == package_versions()
    assert record["torch_cuda"] == torch.version.cuda and record["python"] == platform.python_version()
    assert record["device"] == {
        "setting": "auto",
        "resolved": "cuda" if torch.cuda.is_available() else "cpu",
        "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
    }
    assert record["lock"]["matches"] == (record["lock"]["differences"] == [])
    assert record["models"] == {"toy-gptj": environment(), "toy-old": None}
    table = pd.read_csv(outputs[1], keep_default_na=False).set_index("item")
    assert list(table.columns) == ["run", "lock", "toy-gptj", "toy-old"]
    pins = locked(REPO / LOCK)  # torch's pin from torch.txt, by version alone
    for name in ("torch", "transformers", "nnsight", "snakemake", "numpy"):
        assert table.loc[name, "run"] == table.loc[name, "toy-gptj"] == version(name)
        assert table.loc[name, "lock"] == pins[name].version and table.loc[name, "toy-old"] == "not recorded"
    assert pins["torch"].version == "2.13.0" and version("torch").startswith("2.13.0")
    assert table.loc["torch CUDA", "run"] == (torch.version.cuda or "none (CPU build)")
    # the build the version-alone pin left to the machine, with the digest of its installed RECORD
    build = record["torch_build"]
    assert build["version"] == torch.__version__ and len(build["record_sha256"]) == 64
    assert table.loc["torch build", "run"] == f"{torch.__version__} (RECORD sha256 {build['record_sha256'][:16]})"
    assert table.loc["commit", "run"].startswith(record["helixclock"]["commit"])
    assert table.loc["environment is the lock", "run"].startswith("yes" if record["lock"]["matches"] else "no: ")
    assert "| environment is the lock |" in outputs[2].read_text()


def test_the_table_lists_the_first_differences_from_the_lock():
    env = {**environment(), "python": "3.11.7"}
    found = [f"p{i}==1 is installed but not locked" for i in range(7)]
    record = {
        "helixclock": {"version": "0.1.0", "commit": "abc", "dirty": True},
        **env,
        "device": {"setting": "cuda", "resolved": "cuda", "gpus": ["H100", "H100"]},
        "lock": {"file": "requirements/lock.txt", "matches": False, "differences": found},
        "models": {},
    }
    table = provenance_table(record, {"numpy": "2.4.6"}).set_index("item")
    assert table.loc["commit", "run"] == "abc (with uncommitted changes)"
    assert table.loc["device", "run"] == "cuda (H100, H100) (config key device: cuda)"
    assert table.loc["numpy", "lock"] == "2.4.6" and table.loc["gguf", "lock"] == ""
    matches = table.loc["environment is the lock", "run"]
    assert matches.startswith("no: p0==1") and "p4==1" in matches and "p5==1" not in matches
    assert matches.endswith("and 2 more (results/all/provenance.json)")
