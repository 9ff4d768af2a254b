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
"""What one client of a round costs: the bytes it moves, the FLOPs it runs.

The mixed FL paper (arXiv:2205.13655, section 4.3, table 2, appendix B.3)
compares algorithms by each client's communication and computation per
round. Both are measured here, not computed from a formula:

*   `per_client_communication(process)`: the bytes a client receives and
    sends in one round (`Communication`), read off the types of the
    intrinsics of the process's compiled `next`;
*   `local_step_flops(model, batch_size)`: the FLOPs of one local SGD step
    of a `tff.learning.models.FunctionalModel`, from TF's profiler.
"""

from tff_mixed.core.communication import Communication
from tff_mixed.core.communication import per_client_communication
from tff_mixed.core.flops import local_step_flops

__all__ = [
    'Communication',
    'local_step_flops',
    'per_client_communication',
]
