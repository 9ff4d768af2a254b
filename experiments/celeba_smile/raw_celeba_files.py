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
"""Reads a raw CelebA copy: its attribute and identity files, its images.

The raw CelebA layout `raw_celeba_lib.convert_raw_celeba` reads, and its
correspondence with LEAF's preprocessing, from which TFF's dataset derives:

*   `img_align_celeba/`: the aligned and cropped JPEGs (`000001.jpg`, 178x218).
    LEAF resizes the whole aligned image to 84x84, aspect ratio not kept,
    with `Image.resize` and Pillow's default filter, which changed across
    Pillow releases. Here the image is converted to RGB and resized with an
    explicit `Image.BILINEAR` filter, so the output does not depend on the
    Pillow version. Pixels therefore need not match TFF's download bit for
    bit; the clients, their sizes and the labels do.
*   `identity_CelebA.txt`: `000001.jpg 2880`. A client is a celebrity and its
    id is the identity number as a string, as in LEAF and TFF. LEAF drops
    celebrities with fewer than 5 images (`min_images_per_client`).
*   `list_attr_celeba.txt`: the number of images, the 40 attribute names in
    CelebA's spelling (`5_o_Clock_Shadow ... Young`), then one line per image
    with a value of -1 or 1 per attribute. A name maps to TFF's by lowering
    its case, with `5_o_Clock_Shadow` becoming `five_o_clock_shadow`; -1 is
    written as 0.
"""

from collections.abc import Iterator
import os

import numpy as np
from PIL import Image

from experiments.celeba_smile import celeba_sqlite


# CelebA spells this attribute with a leading digit; TFF spells the digit out.
_CELEBA_NAME_EXCEPTIONS = {'5_o_clock_shadow': 'five_o_clock_shadow'}


def celeba_to_tff_attribute_name(celeba_name: str) -> str:
  """Returns TFF's name of a CelebA attribute, e.g. `Smiling` -> `smiling`."""
  name = celeba_name.lower()
  return _CELEBA_NAME_EXCEPTIONS.get(name, name)


def check_readable_file(path: str, what: str) -> None:
  """Raises a FileNotFoundError naming `what` unless `path` is a file."""
  if not os.path.exists(path):
    raise FileNotFoundError(f'{what} {path} does not exist.')
  if not os.path.isfile(path):
    raise FileNotFoundError(f'{what} {path} is not a file.')


def _data_lines(path: str) -> Iterator[tuple[int, list[str]]]:
  """Yields (line number, whitespace-split fields) of the non-blank lines."""
  with open(path, 'r', encoding='utf-8', errors='replace') as f:
    for line_number, line in enumerate(f, start=1):
      fields = line.split()
      if fields:
        yield line_number, fields


def read_attribute_file(attr_file: str) -> dict[str, dict[str, bool]]:
  """Reads CelebA's `list_attr_celeba.txt`.

  Args:
    attr_file: The path of the file: the number of images, the 40 attribute
      names in CelebA's spelling, then `000001.jpg -1  1 ...` lines.

  Returns:
    Image file name -> {TFF attribute name -> bool}, in file order.

  Raises:
    FileNotFoundError: If the file does not exist.
    ValueError: Naming the file and line: a missing or non-integer image
      count, a header whose names are not TFF's 40 attributes, a line with the
      wrong number of values or a value other than -1 and 1, a repeated image,
      or a number of lines that differs from the count.
  """
  check_readable_file(attr_file, 'The attribute file')
  lines = _data_lines(attr_file)
  where = f'{attr_file}, line 1'
  try:
    line_number, fields = next(lines)
  except StopIteration:
    raise ValueError(f'{attr_file} is empty; expected CelebA\'s '
                     'list_attr_celeba.txt.') from None
  where = f'{attr_file}, line {line_number}'
  if len(fields) != 1 or not fields[0].isdigit():
    raise ValueError(f'{where}: expected the number of images, got '
                     f'{" ".join(fields)[:80]!r} (is this CelebA\'s '
                     'list_attr_celeba.txt, space-separated?).')
  declared = int(fields[0])
  try:
    line_number, header = next(lines)
  except StopIteration:
    raise ValueError(f'{attr_file}: missing the line of attribute '
                     'names.') from None
  where = f'{attr_file}, line {line_number}'
  names = [celeba_to_tff_attribute_name(n) for n in header]
  tff_names = celeba_sqlite.ATTRIBUTE_NAMES
  unknown = [h for h, n in zip(header, names) if n not in tff_names]
  missing = [n for n in tff_names if n not in names]
  repeated = sorted({n for n in names if names.count(n) > 1})
  if unknown or missing or repeated:
    raise ValueError(
        f'{where}: the attribute names do not map to TFF\'s 40 CelebA '
        f'attributes; unknown {unknown}, missing {missing}, repeated '
        f'{repeated}.')
  attributes = {}
  for line_number, fields in lines:
    where = f'{attr_file}, line {line_number}'
    if len(fields) != len(names) + 1:
      raise ValueError(f'{where}: expected an image name and {len(names)} '
                       f'values, got {len(fields)} fields.')
    image_name = fields[0]
    values = {}
    for name, value in zip(names, fields[1:]):
      if value not in ('1', '-1'):
        raise ValueError(f'{where}: attribute {name} of {image_name} is '
                         f'{value!r}; CelebA values are -1 and 1.')
      values[name] = value == '1'
    if image_name in attributes:
      raise ValueError(f'{where}: {image_name} is listed twice.')
    attributes[image_name] = {n: values[n] for n in tff_names}
  if len(attributes) != declared:
    raise ValueError(f'{attr_file}: line 1 declares {declared} images but '
                     f'{len(attributes)} are listed (truncated file?).')
  return attributes


def read_identity_file(identity_file: str) -> dict[str, str]:
  """Reads CelebA's `identity_CelebA.txt`.

  Args:
    identity_file: The path of the file, with `000001.jpg 2880` lines.

  Returns:
    Image file name -> identity (the client id, a string of digits).

  Raises:
    FileNotFoundError: If the file does not exist.
    ValueError: Naming the file and line: a line that is not an image name
      and a non-negative integer, or a repeated image; or an empty file.
  """
  check_readable_file(identity_file, 'The identity file')
  identities = {}
  for line_number, fields in _data_lines(identity_file):
    where = f'{identity_file}, line {line_number}'
    if len(fields) != 2 or not fields[1].isdigit():
      raise ValueError(f'{where}: expected "<image> <identity number>", got '
                       f'{" ".join(fields)[:80]!r}.')
    image_name, identity = fields
    if image_name in identities:
      raise ValueError(f'{where}: {image_name} is listed twice.')
    identities[image_name] = str(int(identity))
  if not identities:
    raise ValueError(f'{identity_file} lists no images.')
  return identities


def load_image(path: str) -> np.ndarray:
  """Returns an image file as a uint8 [84, 84, 3] RGB array.

  Converts to RGB, then resizes the whole image (aspect ratio not kept, as
  LEAF does) with `Image.BILINEAR`.

  Args:
    path: An image file Pillow can read, e.g. a CelebA JPEG.

  Raises:
    ValueError: Naming the file, if it cannot be read or decoded.
  """
  size = (celeba_sqlite.IMAGE_SIZE, celeba_sqlite.IMAGE_SIZE)
  try:
    with Image.open(path) as image:
      resized = image.convert('RGB').resize(size, Image.BILINEAR)
  except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
    raise ValueError(f'Cannot read the image {path}: {e}') from e
  return np.asarray(resized, dtype=np.uint8)
