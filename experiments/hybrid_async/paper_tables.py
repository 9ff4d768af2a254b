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
"""The guided-model-merging paper's numbers, shown beside the hybrid runs.

Zhu et al., "Guided Model Merging for Hybrid Data Learning": final accuracy
in %, per method (`hybrid_config.METHODS` names) and setting key
`(alpha, delay sigma)`, where alpha None stands for clients that are the
data's identities (`hybrid_config.Setting`). A value is a mean, or
`(mean, std)` where the paper gives both. Only data here; the reports say
how our runs differ from the paper's.
"""

from collections.abc import Sequence
from typing import Any, NamedTuple, Optional, Union

Value = Union[float, tuple[float, float]]


class PaperTable(NamedTuple):
  """One of the paper's tables, for runs on `data`.

  Attributes:
    name: The table, as the paper numbers it.
    data: The client data it is for: a table applies to runs whose data
      description names it before its first ';' (the clients' data).
    caption: How the paper's runs were made (for the report).
    values: {method: {(alpha, delay sigma): `Value`}}.
    pretrained: Which runs' start it is for (None: any).
  """
  name: str
  data: str
  caption: str
  values: dict[str, dict[tuple[Optional[float], float], Value]]
  # True: only for runs from a pretrained start; False: only from scratch;
  # None: either (the run's data description says `start: pretrained`).
  pretrained: Optional[bool] = None


_TABLE7_SETTINGS = ((0.1, 20), (0.1, 5), (0.3, 20), (0.3, 5))
# Appendix F.2. The paper has no LoAdaBoost; Center does not depend on the
# setting.
TABLE7_CIFAR10_CNN = PaperTable(
    name='table 7', data='CIFAR-10',
    caption='the same kind of CNN from scratch, on all 50,000 CIFAR-10 '
    'training images at 32x32, 500 clients, 200 rounds',
    values={method: dict(zip(_TABLE7_SETTINGS, values)) for method, values in (
        ('center', (42.1, 42.1, 42.1, 42.1)),
        ('fed_ft', (44.3, 47.4, 46.9, 51.3)),
        ('hfcl', (44.7, 47.1, 47.6, 51.2)),
        ('feddf_id', (18.0, 19.8, 37.3, 39.5)),
        ('feddle_id', (51.2, 52.9, 51.5, 53.3)),
        # The paper's FedAvg runs under the delays: our fedavg_delayed.
        ('fedavg_delayed', (31.0, 35.0, 37.2, 52.0)),
        ('fedasync', (35.5, 40.4, 43.2, 45.7)),
        ('fedbuff', (26.8, 33.2, 32.6, 44.0)),
        ('ca2fl', (27.6, 36.6, 37.1, 43.9)),
        ('feddf_ood', (18.5, 19.4, 35.1, 39.3)),
        ('feddle_ood', (37.6, 42.3, 44.5, 53.1)),
    )}, pretrained=False)

# Appendix F.1, the ResNet18 columns: the same settings from an ImageNet-
# pretrained backbone (our pretrained start stands in for it).
TABLE6_CIFAR10_RESNET18 = PaperTable(
    name='table 6', data='CIFAR-10',
    caption='ResNet18 pretrained on ImageNet, fine-tuned on all 50,000 '
    'CIFAR-10 training images, 1,000 in-domain server samples',
    values={method: dict(zip(_TABLE7_SETTINGS, values)) for method, values in (
        ('center', ((77.3, 0.8),) * 4),
        ('fed_ft', ((78.4, 0.6), (81.3, 0.2), (80.1, 0.2), (82.2, 0.2))),
        ('hfcl', ((80.2, 0.9), (83.7, 1.0), (82.1, 0.3), (85.7, 0.4))),
        ('feddf_id', ((57.3, 1.5), (75.4, 0.4), (74.4, 1.0), (82.1, 0.3))),
        ('feddle_id', ((86.3, 0.4), (86.7, 0.5), (87.3, 0.4), (87.8, 0.3))),
        ('fedavg_delayed', ((56.4, 5.3), (75.1, 1.0), (72.4, 1.0),
                            (85.2, 0.2))),
        ('fedasync', ((65.1, 3.5), (74.9, 2.4), (79.3, 1.9), (83.9, 1.4))),
        ('fedbuff', ((59.6, 3.3), (72.8, 7.3), (69.3, 8.0), (77.9, 4.3))),
        ('ca2fl', ((64.4, 7.2), (80.2, 0.9), (71.6, 5.7), (76.3, 6.8))),
        ('feddf_ood', ((29.7, 1.1), (29.2, 5.6), (42.9, 2.9), (42.8, 2.1))),
        ('feddle_ood', ((82.2, 1.4), (83.1, 0.3), (86.1, 0.5), (88.3, 0.6))),
    )}, pretrained=True)

# Section 5, table 2: real-world heterogeneity, CelebA Smiling with one
# client per identity, 200 in-domain server samples, delay N(20); mean and
# std over the paper's runs.
TABLE2_CELEBA = PaperTable(
    name='table 2', data='CelebA',
    caption='ResNet18 on the full CelebA (clients are identities), 200 '
    'in-domain server samples',
    values={method: {(None, 20): value} for method, value in (
        ('center', (75.8, 0.3)),
        ('fed_ft', (84.3, 0.1)),
        ('hfcl', (83.9, 0.2)),
        ('feddf_id', (83.8, 0.3)),
        ('feddle_id', (90.2, 0.1)),
        ('fedavg_delayed', (74.3, 1.0)),
        ('fedasync', (85.9, 0.7)),
        ('fedbuff', (87.2, 0.3)),
        ('ca2fl', (88.4, 0.9)),
        ('feddf_ood', (81.9, 1.2)),
        ('feddle_ood', (90.2, 0.3)),
    )})

TABLES = (TABLE7_CIFAR10_CNN, TABLE6_CIFAR10_RESNET18, TABLE2_CELEBA)
PRETRAINED_MARK = 'start: pretrained'


def _format(value: Value) -> str:
  if isinstance(value, tuple):
    return f'{value[0]:.1f} ± {value[1]:.1f}'
  return f'{value:.1f}'


def paper_table(methods: Sequence[str], settings: Sequence[Any],
                table: PaperTable = TABLE7_CIFAR10_CNN) -> Optional[str]:
  """`table`'s numbers for these methods and settings (Markdown; n/a where
  it has none), or None if it has none of the settings.

  `settings` are `hybrid_config.Setting`s (`alpha`, `delay_std`,
  `label`).
  """
  keys = [(s.alpha, s.delay_std) for s in settings]
  if not any(k in values for values in table.values.values() for k in keys):
    return None
  lines = [f'| method (paper, {table.name}) | ' + ' | '.join(
      s.label for s in settings) + ' |', '| --- |' + ' --- |' * len(settings)]
  for method in methods:
    values = table.values.get(method, {})
    lines.append(f'| {method} | ' + ' | '.join(
        _format(values[k]) if k in values else 'n/a' for k in keys) + ' |')
  return '\n'.join(lines) + '\n'


def reference(methods: Sequence[str], settings: Sequence[Any],
              data_description: str) -> Optional[tuple[PaperTable, str]]:
  """The paper's table for runs on this data, start and settings, and its
  Markdown (`paper_table`); None if no table has them."""
  pretrained = PRETRAINED_MARK in data_description
  for table in TABLES:
    if table.pretrained is not None and table.pretrained != pretrained:
      continue
    if table.data in data_description.split(';')[0]:
      text = paper_table(methods, settings, table)
      if text:
        return table, text
  return None
