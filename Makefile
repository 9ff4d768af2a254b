# Two commands do all the set-up from a fresh clone (Python 3.11, PyPI access):
#   make demo   - the main job: mixed FL vs FL-only vs oracle on bundled data
#   make test   - the test suite
# Both create or reuse the virtualenv at .venv (scripts/setup_venv.sh).

PY := .venv/bin/python
RUN := scripts/with_worker_cleanup.sh
# pytest processes for `make test`: one per core, at most 4 (each holds a
# TensorFlow runtime and a TFF worker, about 1 GB); TEST_WORKERS=0 runs serially.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)

.PHONY: venv demo results test bazel-test benchmark benchmark-celeba benchmark-movielens clean

venv:
	@bash scripts/setup_venv.sh

demo: venv
	@$(RUN) $(PY) -m experiments.label_imbalance.label_imbalance_main $(ARGS)

# The default demo run, recorded in RESULTS.md (machine, date, data, table).
results: venv
	@$(RUN) $(PY) -m experiments.label_imbalance.label_imbalance_main --results_markdown=RESULTS.md $(ARGS)

test: venv
	@$(RUN) $(PY) -m pytest tests -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadscope $(ARGS)

# Installs Bazel (Debian's bazel-bootstrap) if missing; runs offline.
bazel-test: venv
	@$(RUN) bash scripts/bazel_test.sh test //... $(ARGS)

benchmark: venv
	@$(RUN) $(PY) -m benchmarks.round_time $(ARGS)

# The movie task: federated_select vs broadcasting the table.
benchmark-movielens: venv
	@$(RUN) $(PY) -m benchmarks.movielens_select $(ARGS)

# The CelebA pipeline at the paper's scale, on a synthetic celeba.sqlite.
benchmark-celeba: venv
	@$(RUN) $(PY) -m benchmarks.celeba_scale $(ARGS)

clean:
	rm -rf outputs .pytest_cache
