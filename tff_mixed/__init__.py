# Copyright 2026, The tff_mixed Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""tff_mixed: mixed federated learning on TensorFlow Federated 0.87.

Public API (see README.md). Mixed FL trains one model on a federated loss f_f,
computed only on clients, and a centralized loss f_c, computed at the server
(Augenstein et al., arXiv:2205.13655).
"""

from tff_mixed import remote
from tff_mixed import runtime as _runtime
from tff_mixed.algorithms.example_transfer import build_example_transfer
from tff_mixed.algorithms.example_transfer import build_fedavg_with_shared_data
from tff_mixed.algorithms.gradient_transfer import build_one_way_gradient_transfer
from tff_mixed.algorithms.gradient_transfer import build_two_way_gradient_transfer
from tff_mixed.algorithms.parallel_training import build_parallel_training
# Asynchronous FL on hybrid data (guided model merging, Feddle): the arrival
# schedule, client training, FedAsync / FedBuff / CA2FL, Feddle, the loop.
from tff_mixed.asynchronous import feddle
from tff_mixed.asynchronous.client_training import build_client_training
from tff_mixed.asynchronous import hybrid_baselines
from tff_mixed.asynchronous import loadaboost
from tff_mixed.asynchronous.schedule import AsyncSchedule
from tff_mixed.asynchronous.schedule import check_delays_arrive
from tff_mixed.asynchronous.schedule import first_round_with_shortage
from tff_mixed.asynchronous.server_strategies import CA2FL
from tff_mixed.asynchronous.server_strategies import ClientUpdate
from tff_mixed.asynchronous.server_strategies import FedAsync
from tff_mixed.asynchronous.server_strategies import FedBuff
from tff_mixed.asynchronous.feddle import FeddleMethod
from tff_mixed.asynchronous.simulation import run_async
from tff_mixed.core.central_objective import central_data_objective
from tff_mixed.core.central_objective import central_regularizer
from tff_mixed.core.central_objective import CentralObjective
from tff_mixed.core.communication import Communication
from tff_mixed.core.communication import per_client_communication
from tff_mixed.core.embedding_select import EmbeddingSelection
from tff_mixed.core.example_store import ExampleStore
from tff_mixed.core.example_store import load_example_store
from tff_mixed.core.example_store import write_example_store
from tff_mixed.core.flops import local_step_flops
from tff_mixed.core.mixed_process import MixedFLState
from tff_mixed.models.dense import build_binary_classifier
from tff_mixed.models.dense import build_linear_regression
# The character language model (GRU) of the Stack Overflow + Wikipedia task.
from tff_mixed.models import char_lm
from tff_mixed.models.char_lm import build_char_lm
# The small CNN of the guided-model-merging experiments.
from tff_mixed.models import cnn
from tff_mixed.models.cnn import build_cnn
# The movie task's dual encoder (losses, federated_select slicing, recall@k).
from tff_mixed.models import dual_encoder
from tff_mixed.models.dual_encoder import build_dual_encoder
from tff_mixed.training import checkpoints as training_checkpoints
from tff_mixed.training.checkpoints import CheckpointMismatchError
from tff_mixed.training.reports import atomic_write
from tff_mixed.training.reports import atomic_write_text
from tff_mixed.training.reports import make_directory
from tff_mixed.training.reports import remove_quietly
from tff_mixed.training.reports import temp_path_beside
from tff_mixed.training.reports import write_markdown_section
from tff_mixed.training.runner import DivergenceError
from tff_mixed.training.runner import prepare_run
from tff_mixed.training.runner import ROUND_KEY as RUN_ROUND_KEY
from tff_mixed.training.runner import run_training
from tff_mixed.training.runner import RunResult
# Tasks (build_task, evaluate, ...): the bundled digits label imbalance, and
# the CelebA smile classifier on TFF's CelebA.
from tff_mixed.tasks import celeba_smile
# Characters to next-character sequences, and the Stack Overflow + Wikipedia
# task (TFF's Stack Overflow loader, central texts).
from tff_mixed.tasks import char_sequences
from tff_mixed.tasks import digits_label_imbalance
from tff_mixed.tasks import movielens
from tff_mixed.tasks import stackoverflow_wikipedia
from tff_mixed.tasks import text_corpus
from tff_mixed.tasks import hybrid_images
from tff_mixed.tasks.dirichlet_partition import dirichlet_partition

__version__ = '0.1.0'

# TFF's local runtime orphans its worker process at exit, holding our stdout
# open; end the workers this process started (tff_mixed/runtime.py).
_runtime.register_worker_cleanup()
