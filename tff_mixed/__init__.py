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

Mixed FL trains one model on a federated loss f_f, computed only on clients,
and a central loss f_c, computed at the server (Augenstein et al.,
arXiv:2205.13655). This facade is the public API, kept small
(`docs/LIBRARY.md`):

*   the algorithms' builders (FedAvg among them), their state and their
    central objective; `functional_model`, which turns TFF's model inputs
    (a `model_fn`, a Keras model) into the FunctionalModel they train;
*   `components` and `compose_mixed_process`: the public components of a
    mixed FL process (distributor, client work, aggregator, central work,
    finalizer) and their composer, to write a new algorithm in one file
    (docs/COMPOSING.md);
*   `ClientGroups`, the fast simulation mode: many clients per CLIENTS
    member, trained in one computation, with the per-client results;
    `simulation` holds it with the helpers that split a cohort into groups
    and feed them;
*   `costs`: what one client of a round costs, measured (bytes received
    and sent, FLOPs of a local step);
*   the algorithm registries, by name: `tff_mixed.registry` of the
    synchronous algorithms (a `LearningProcess` each) and
    `tff_mixed.async_registry` of the asynchronous ones (an `AsyncStrategy`
    each, for `run_async`);
*   the runner (`run_training`), for any `tff.learning` process, and
    `DropReport`, which turns the clients and rounds a process's metrics
    say were dropped into console warnings (the runner uses it);
*   `ArrayDataSource`: clients' numpy arrays as a `tff.program` data source,
    so that the processes (true `tff.learning.templates.LearningProcess`es)
    also run under TFF's program layer, `tff.learning.programs.train_model`
    with a `tff.program.FileProgramStateManager`
    (examples/train_with_tff_program.py);
*   the algorithm advisor (`advise`, `Advice`): PT, 1-way or 2-way GT from
    a run's first rounds with diagnostics;
*   asynchronous FL on hybrid data (guided model merging, Zhu et al.): its
    server strategies (all `AsyncStrategy`s, also built by name through
    `async_registry`), Feddle, the arrival schedule, the clients' local
    training (`build_async_client_training`), `run_async` and the
    `AsyncObserver` that sees a run's merges and rounds;
*   `register_worker_cleanup`, which makes the TFF worker processes this
    process starts end with it. Importing `tff_mixed` has no side effects
    (no exit hook, TFF's modules untouched); `run_training`, `run_async`
    and the binaries make this call, and a program that runs TFF
    computations in a loop of its own makes it once before the first.

Everything else stays importable from its module, e.g.
`from tff_mixed.models import dense`, `from tff_mixed.tasks import movielens`;
docs/ARCHITECTURE.md maps the packages. The experiments that reproduce the
papers, and what they share, live beside the library in `experiments/`,
outside the installed package.
"""

# The package's version, in this one place (pyproject.toml reads it).
__version__ = '0.1.0'

# The mixed FL algorithms (arXiv:2205.13655, arXiv:2111.12150).
from tff_mixed.algorithms.example_transfer import build_example_transfer
from tff_mixed.algorithms.example_transfer import build_fedavg_with_shared_data
from tff_mixed.algorithms.fedavg import build_fedavg
from tff_mixed.algorithms.gradient_transfer import build_one_way_gradient_transfer
from tff_mixed.algorithms.gradient_transfer import build_two_way_gradient_transfer
from tff_mixed.algorithms.parallel_training import build_parallel_training
from tff_mixed.algorithms import registry
# Writing a new one: the public components and the composer
# (docs/COMPOSING.md, examples/custom_algorithm.py).
from tff_mixed.algorithms import components
from tff_mixed.algorithms.components import compose_mixed_process
# Their state, their central loss f_c and the federated_select distributor.
from tff_mixed.core.central_objective import central_data_objective
from tff_mixed.core.central_objective import central_regularizer
from tff_mixed.core.central_objective import CentralObjective
from tff_mixed.simulation.client_groups import ClientGroups
from tff_mixed.core.embedding_select import EmbeddingSelection
# The fast simulation of a cohort (groups of clients) and its helpers.
from tff_mixed import simulation
# A client's communication and computation per round, measured.
from tff_mixed import costs
# TFF's own inputs (a model_fn, a Keras model) as the FunctionalModel the
# builders use; they call it on their `model`.
from tff_mixed.core.inputs import functional_model
from tff_mixed.core.mixed_process import MixedFLState
# The algorithm advisor (arXiv:2205.13655, section 5, appendix C).
from tff_mixed.advisor.advice import advise
from tff_mixed.advisor.advice import Advice
# Asynchronous FL on hybrid data.
# The clients' side of an asynchronous run: local training from the
# weights a client was sent, its update returned (`run_async` takes it).
from tff_mixed.asynchronous.client_training import build_client_training as build_async_client_training
# The asynchronous algorithms by name, beside `registry`'s synchronous ones.
from tff_mixed.asynchronous import registry as async_registry
from tff_mixed.asynchronous.deadline_fedavg import DeadlineFedAvg
from tff_mixed.asynchronous.feddle import FeddleMethod
from tff_mixed.asynchronous.schedule import AsyncSchedule
from tff_mixed.asynchronous.server_strategies import CA2FL
from tff_mixed.asynchronous.server_strategies import FedAsync
from tff_mixed.asynchronous.server_strategies import FedBuff
from tff_mixed.asynchronous.simulation import run_async
from tff_mixed.asynchronous.strategy import AsyncObserver
from tff_mixed.asynchronous.strategy import AsyncStrategy
# The runner: rounds, evaluation, checkpoints, metrics.
from tff_mixed.training.array_data_source import ArrayDataSource
from tff_mixed.training.checkpoints import CheckpointMismatchError
from tff_mixed.training.drop_report import DropReport
from tff_mixed.training.runner import DivergenceError
from tff_mixed.training.runner import run_training
from tff_mixed.training.runner import RunResult
# Ending the TFF workers this process starts: an explicit call, never made at
# import (tff_mixed/runtime.py).
from tff_mixed.runtime import register_worker_cleanup

__all__ = [
    'Advice',
    'ArrayDataSource',
    'AsyncObserver',
    'AsyncSchedule',
    'AsyncStrategy',
    'CA2FL',
    'CentralObjective',
    'CheckpointMismatchError',
    'ClientGroups',
    'DeadlineFedAvg',
    'DivergenceError',
    'DropReport',
    'EmbeddingSelection',
    'FedAsync',
    'FedBuff',
    'FeddleMethod',
    'MixedFLState',
    'RunResult',
    'advise',
    'async_registry',
    'build_async_client_training',
    'build_example_transfer',
    'build_fedavg',
    'build_fedavg_with_shared_data',
    'build_one_way_gradient_transfer',
    'build_parallel_training',
    'build_two_way_gradient_transfer',
    'central_data_objective',
    'central_regularizer',
    'components',
    'compose_mixed_process',
    'costs',
    'functional_model',
    'register_worker_cleanup',
    'registry',
    'run_async',
    'run_training',
    'simulation',
]

