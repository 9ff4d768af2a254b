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
"""The character vocabulary shared by the char LM and its sequences.

The mixed FL paper's language model (arXiv:2205.13655, section 4.2 and
appendix B.2.2) predicts the next character of sequences of 100 characters.
The vocabulary is fixed, so Stack Overflow clients, Wikipedia and WikiText
share it without a pass over the data:

*   0: padding (no loss, not counted in accuracy),
*   1: out of vocabulary (any character outside printable ASCII),
*   2: beginning of a text, 3: end of a text,
*   4..98: the 95 printable ASCII characters, space (32) to '~' (126).

Tabs, newlines and carriage returns count as spaces.

The model (`char_lm`) needs the vocabulary size and the padding id; the task
(`tff_mixed.tasks.char_sequences`) maps text to these ids. Both read them
here, so the model does not depend on the task.
"""

PAD_ID = 0
OOV_ID = 1
BOS_ID = 2
EOS_ID = 3
FIRST_CHAR_ID = 4
FIRST_CODE_POINT = 32  # ' '
LAST_CODE_POINT = 126  # '~'
VOCAB_SIZE = FIRST_CHAR_ID + LAST_CODE_POINT - FIRST_CODE_POINT + 1
# Tab, newline, carriage return: mapped to a space.
WHITESPACE_CODE_POINTS = (9, 10, 13)
# Characters per example (the paper: 100), the model's default input length.
DEFAULT_SEQUENCE_LENGTH = 100
