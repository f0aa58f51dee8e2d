"""The paste reader: pasted text -> :class:`~.evidence.Paste`, line by line (each line cleaned
and bounded; each pattern run only where its needle occurs)."""

from __future__ import annotations

import re
from typing import Optional

from torchdoctor import tables
from torchdoctor.importers import collect_env as ce
from torchdoctor.importers.paste.evidence import (
    MAX_GPUS,
    MAX_LABEL_CHARS,
    MAX_LINE_CHARS,
    MAX_LINES,
    MAX_MESSAGE_CHARS,
    MAX_NAME_LOOKUPS,
    RANK_INSTALL,
    RANK_LIST,
    RANK_TOOL,
    Evidence,
    Paste,
    _GpuGroup,
)
from torchdoctor.importers.paste.wording import _norm_label, _of_interest, patterns

# --------------------------------------------------------------------------------------
# reading lines
# --------------------------------------------------------------------------------------

_VERSION = re.compile(r"v?(\d{1,4}(?:\.\d{1,9}){0,3}[0-9A-Za-z.+!_-]{0,60})")
_VERSIONISH = re.compile(r"\d{1,4}\.\d{1,9}")
_BOOL_WORDS = {"true": True, "yes": True, "false": False, "no": False}
_REQ_CUT = re.compile(r"[<>=!~;,]")
_CHECK_MARKS = ("\u2705", "\u274c", "\u2714", "\u2716", "\u26a0\ufe0f", "\u26a0")
_CONDA_BUILD = re.compile(r"[A-Za-z0-9_.+]{1,80}")
_FENCE = re.compile(r"^(?:```|~~~)[ ]{0,3}")
_HEADING = re.compile(r"^#{1,6} {1,4}(.{1,80})$")
_BANNER = re.compile(r"^[=\-]{5,200}$")
_DOTTED = re.compile(r"^([A-Za-z][A-Za-z0-9 /()._-]{0,60}?) \.{3,60} (\S.{0,300})$")
_TABLE_SPLIT = re.compile(r"\S(?:  |\t)\s{0,200}(?=\S)")
_GPU_LABEL = re.compile(r"^GPU ?([0-9,]{1,800})$")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,80}")


def _version_value(value: str) -> Optional[str]:
    """The version a value starts with ("2.5.1+cu121 (False)" -> 2.5.1+cu121), else None."""
    text = value.strip().strip("'\"")
    m = _VERSION.match(text)
    if not m or not _VERSIONISH.match(m.group(1)):
        return None
    version = m.group(1)
    cut = _REQ_CUT.search(version)
    if cut:
        version = version[: cut.start()]
    return version.rstrip(".,;:") or None


def _cuda_of_variant(variant: str) -> Optional[str]:
    """cu121 -> 12.1, cu92 -> 9.2 (the wheels' local label / index name)."""
    if variant.startswith("cu") and variant[2:].isdigit() and 2 <= len(variant) - 2 <= 3:
        digits = variant[2:]
        return f"{int(digits[:-1])}.{digits[-1]}"
    return None


def _local_label(version: str) -> Optional[str]:
    return version.split("+", 1)[1].lower() if "+" in version else None


def _clean(raw: str) -> Optional[str]:
    line = raw[:MAX_LINE_CHARS]
    m = _FENCE.match(line.lstrip())
    if m:
        rest = line.lstrip()[m.end():]
        if not rest.strip() or _WORD.fullmatch(rest.strip()):
            return None  # a fence, or a fence with a language tag
        line = rest
    return ce._clean_line(line)


class _Reader:
    def __init__(self, text: str):
        self.p = patterns()
        self.paste = Paste()
        self.text = text
        self.section: Optional[str] = None
        self.gpu_list: Optional[_GpuGroup] = None
        self.expect: Optional[tuple[tuple[str, ...], int]] = None  # (keys, line) of an expression
        self.pip_show: Optional[tuple[str, int]] = None
        self.recent: list[str] = []  # cleaned lines before this one (traceback context)
        self.banner_title = False
        self.install_failed = False
        self.lookups = 0

    # ---------------------------------------------------------------- driving

    def read(self) -> Paste:
        for n, raw in enumerate(self.text.splitlines(), 1):
            if n > MAX_LINES:
                break
            line = _clean(raw)
            if line is None:
                self.gpu_list = None
                self.expect = None if self.expect is None or n - self.expect[1] > 1 else self.expect
                continue
            stripped = line.strip()
            if not self.install_failed and any(x in stripped for x in self.p.install_failed):
                self.install_failed = True
            self._line(n, stripped)
            self.recent.append(stripped)
            if len(self.recent) > max(1, self.p.import_window):
                self.recent.pop(0)
        if self.install_failed:  # what an install command asked for was not installed
            paste = self.paste
            if "torch_version" in paste.fields and paste.fields["torch_version"].rank == RANK_INSTALL:
                del paste.fields["torch_version"]
            if paste.cuda_variant is not None and paste.cuda_variant.rank == RANK_INSTALL:
                paste.cuda_variant = None
        return self.paste

    def _line(self, n: int, s: str) -> None:
        if self.expect is not None:
            keys, at = self.expect
            self.expect = None
            if n - at <= 2:
                # print(torch.__version__, torch.cuda.is_available()) -> "2.1.0+cu121 True"
                words = s.split() if len(keys) > 1 else [s]
                if len(words) == len(keys) and all(
                    self._expression_output(k, w, n) for k, w in zip(keys, words)
                ):
                    return
        found = sorted((s.find(expr), key) for expr, key in self.p.expressions if expr in s)
        if len(found) == 1:
            key = found[0][1]
            expr = next(e for e, k in self.p.expressions if k == key)
            tail = s.split(expr, 1)[1].strip().lstrip(")").strip()
            if tail.startswith(("'", '"')) or (tail[:1].isdigit() and key != "is_cuda_available"):
                self._expression_output(key, tail, n)  # ">>> torch.__version__ '2.1.0'"
            else:
                self.expect = ((key,), n)
        elif found:
            self.expect = (tuple(key for _, key in found), n)
        self._messages(n, s)
        self._import_failure(n, s)
        self._paths(n, s)
        if self._section_header(n, s):
            return
        if self._gpu_list_item(n, s):
            return
        if self._key_value(n, s):
            return
        if self._package_row(n, s):
            return
        if self._table_row(n, s):
            return
        self._bare_line(n, s)

    # ---------------------------------------------------------------- pieces

    def _expression_output(self, key: str, value: str, n: int) -> bool:
        value = value.strip().strip("'\"").strip()
        if key == "is_cuda_available":
            b = _BOOL_WORDS.get(value.lower())
            if b is None:
                return False
            self.paste.put(key, str(b), n, "shell output", RANK_TOOL)
            self.paste.first("torch_imported", True, n, "shell output")
            return True
        if key == "cuda_compiled_version" and value.lower() == "none":
            self.paste.put(key, "None", n, "shell output", RANK_TOOL)
            self.paste.first("torch_imported", True, n, "shell output")
            return True
        version = _version_value(value)
        if version is None or " " in value.strip():
            return False
        self.paste.put(key, version, n, "shell output", RANK_TOOL)
        self.paste.first("torch_imported", True, n, "shell output")
        return True

    def _messages(self, n: int, s: str) -> None:
        paste = self.paste
        for msg in self.p.messages:
            if msg.needle not in s:
                continue
            m = msg.regex.search(s)
            if not m:
                continue
            how = "torch message" if msg.id not in _TOOL_MESSAGES else _TOOL_MESSAGES[msg.id]
            g = m.groupdict()
            sets = msg.sets
            if sets.get("torch_imported"):
                paste.first("torch_imported", True, n, how)
            if "cuda_available" in sets:
                paste.first("cuda_available", bool(sets["cuda_available"]), n, how)
            if sets.get("cuda_build_none"):
                paste.first("cuda_build_none", True, n, how)
            if sets.get("init_error"):
                start = s.find(msg.start) if msg.start else m.start()
                text = " ".join(s[max(start, 0):].split())[:MAX_MESSAGE_CHARS]
                if text and all(e.value != text for e in paste.init_errors):
                    paste.init_errors.append(Evidence(text, n, how, RANK_TOOL))
            if sets.get("compile_error"):
                start = s.find(msg.start) if msg.start else m.start()
                paste.first("compile_error", " ".join(s[max(start, 0):].split())[:MAX_MESSAGE_CHARS], n, how)
            cc = None
            if g.get("sm"):
                digits = g["sm"]
                cc = float(f"{int(digits[:-1])}.{digits[-1]}")
            elif g.get("cc"):
                cc = float(g["cc"])
            if g.get("gpu"):
                name = self._gpu_value(g["gpu"])[0]
                index = int(g["index"]) if g.get("index") else 0
                if msg.id == "nvidia-smi-gpu":
                    group = next((x for x in paste.gpu_groups if x.how == how and x.last >= n - 40
                                  and all(i != index for i, _, _ in x.names)), None)
                    if group is not None:
                        group.names.append((index, name, cc))
                        group.last = n
                    else:
                        paste.gpus(how, RANK_TOOL, n, [(index, name, cc)])
                    continue
                paste.gpus(how, RANK_TOOL, n, [(index, name, cc)])
            if g.get("archs"):
                archs = [a for a in g["archs"].replace(",", " ").split()
                         if re.fullmatch(r"(?:sm|compute)_\d{2,3}[a-z]?", a)]
                if archs:
                    paste.first("arch_list", archs, n, how)
            if g.get("found"):
                found = int(g["found"])
                paste.first("cuda_driver", f"{found // 1000}.{found % 1000 // 10}", n, how)
            if g.get("cuda_driver"):
                paste.first("cuda_driver", g["cuda_driver"], n, how)
            if g.get("driver"):
                paste.put("nvidia_driver_version", g["driver"], n, how, RANK_TOOL)
            if g.get("toolkit"):
                paste.put("cuda_runtime_version", g["toolkit"], n, how, RANK_TOOL)
            if g.get("torch"):
                paste.put("torch_version", g["torch"], n, how, RANK_TOOL)
            if g.get("python"):
                paste.put("python_version", g["python"], n, how, RANK_TOOL)
            if g.get("cudnn_built") and g.get("cudnn_runtime"):
                built = ".".join(x.strip() for x in g["cudnn_built"].split(","))
                runtime = ".".join(x.strip() for x in g["cudnn_runtime"].split(","))
                paste.first("cudnn", (built, runtime), n, how)

    def _import_failure(self, n: int, s: str) -> None:
        if "Error: " not in s:
            return
        m = self.p.import_exception.match(s)
        if not m:
            return
        kind, message = m.group("kind"), m.group("message").strip()
        context = "\n".join([*self.recent, message])
        if any(bad in message for bad in self.p.not_torch):
            return
        if any(c in context for c in self.p.torch_context):
            self.paste.first("import_failure", (kind, message), n, "traceback")

    def _paths(self, n: int, s: str) -> None:
        paste = self.paste
        for pat in self.p.paths:
            if pat.needle not in s or (pat.context and not any(c in s for c in pat.context)):
                continue
            m = pat.regex.search(s)
            if not m:
                continue
            g = m.groupdict()
            how = _PATH_KINDS.get(pat.id, "path")
            if g.get("python"):
                paste.put("python_version", g["python"], n, how, pat.rank)
            if g.get("python_nodot"):
                d = g["python_nodot"]
                paste.put("python_version", f"{d[0]}.{d[1:]}", n, how, pat.rank)
            if g.get("platform"):
                paste.put("python_platform", g["platform"], n, how, pat.rank)
            if g.get("torch"):
                paste.put("torch_version", g["torch"].replace("%2B", "+").replace("%2b", "+"),
                          n, how, pat.rank)
            if g.get("torch_base") and g.get("rocm"):
                paste.put("torch_version", f"{g['torch_base']}+rocm{g['rocm']}", n, how, pat.rank)
            if g.get("variant"):
                paste.first("cuda_variant", g["variant"].lower(), n, how, pat.rank)
            if g.get("driver"):
                paste.put("nvidia_driver_version", g["driver"], n, how, pat.rank)
            if g.get("os_name"):
                paste.put("os", g["os_name"], n, how, pat.rank)
            if g.get("installer"):
                paste.first("installer", g["installer"].lower(), n, how, pat.rank)
            elif pat.id == "pip-torch-pin":
                paste.first("installer", "pip", n, how, pat.rank)
            if g.get("gpu") and not paste.gpu_groups and self._lookup():
                name = re.sub(r"([RG]TX)(\d)", r"\1 \2", g["gpu"])
                if tables.cc_for_gpu_name(name) is not None:
                    paste.gpus(how, pat.rank, n, [(0, name, None)])

    def _section_header(self, n: int, s: str) -> bool:
        label = None
        m = _HEADING.match(s)
        if m:
            label = m.group(1)
        elif s.endswith(":") and len(s) <= MAX_LABEL_CHARS and ":" not in s[:-1]:
            label = s[:-1]
        elif _BANNER.match(s):
            self.banner_title = True
            return True
        elif self.banner_title and len(s) <= MAX_LABEL_CHARS and ":" not in s:
            label = s
        self.banner_title = False
        if label is None:
            return False
        key = _norm_label(label)
        if key in self.p.sections:
            self.section = self.p.sections[key]
            self.gpu_list = None
            return True
        if m or _BANNER.match(s):
            self.section = None
            return True
        return False

    def _gpu_list_item(self, n: int, s: str) -> bool:
        if self.gpu_list is None:
            return False
        if ":" in s or len(s) > 120:
            self.gpu_list = None
            return False
        name, cc = self._gpu_value(s)
        if not name or name.lower() in self.p.empty_values:
            self.gpu_list = None
            return True
        self.gpu_list.names.append((len(self.gpu_list.names), name, cc))
        if len(self.gpu_list.names) == 1:
            self.paste.gpu_groups.append(self.gpu_list)
        return True

    def _label(self, label: str) -> tuple[Optional[str], str]:
        norm = _norm_label(label)
        if self.section is not None:
            key = self.p.scoped.get((self.section, norm))
            if key is not None:
                return key, norm
        return self.p.labels.get(norm), norm

    def _key_value(self, n: int, s: str) -> bool:
        m = _DOTTED.match(s) if " ..." in s else None
        if m:  # DeepSpeed's ds_report: "torch version .................... 2.1.0+cu121"
            return self._labelled(n, m.group(1), m.group(2), "key-value line")
        at = s.find(":")
        if at <= 0 or at > MAX_LABEL_CHARS:
            return False
        label, value = s[:at].strip(), s[at + 1:].strip()
        if not label or ce._NOT_LABEL.search(ce._PARENS.sub("", label)) or "/" in label or "\\" in label:
            return False  # JSON keys, YAML flow, tables, paths: not labels
        if label.lower().startswith(("http", "https")) or value.startswith("//"):
            return False
        return self._labelled(n, label, value, "key-value line")

    def _table_row(self, n: int, s: str) -> bool:
        m = _TABLE_SPLIT.search(s)
        if not m or m.start() + 1 > MAX_LABEL_CHARS:
            return False
        label, value = s[: m.start() + 1].strip(), s[m.end():].strip()
        if not value:
            return False
        return self._labelled(n, label, value, "table row")

    def _labelled(self, n: int, label: str, value: str, how: str) -> bool:
        paste, p = self.paste, self.p
        gpu_index = _GPU_LABEL.match(label)
        if gpu_index and value:
            indices = [int(x) for x in gpu_index.group(1).split(",") if x.isdigit()][:MAX_GPUS]
            name, cc = self._gpu_value(value)
            if name and name.lower() not in p.empty_values:
                group = next((g for g in paste.gpu_groups if g.how == how and g.last >= n - 4), None)
                entries = [(i, name, cc) for i in indices]
                if group is not None:
                    group.names.extend(entries)
                    group.last = n
                else:
                    paste.gpus(how, RANK_TOOL, n, entries)
            return True
        key, norm = self._label(label)
        if norm.endswith(p.arch_flags_suffix) and len(norm) > len(p.arch_flags_suffix):
            name = label.strip()[: -len("arch flags")].strip() if label.lower().endswith("arch flags") else ""
            archs = _arch_flags(value)
            if name and archs:
                paste.extension_archs.setdefault(ce._norm_name(name), Evidence(archs, n, how, RANK_TOOL))
            return True
        if key is None:
            # "transformers version: 4.54.1", "- torch: 2.6.0+cu126", "Name: torch" (pip show)
            version = _version_value(value)
            if norm == "name" and _of_interest(ce._norm_name(value)):
                self.pip_show = (value, n)
                return True
            if norm == "version" and self.pip_show and n - self.pip_show[1] <= 3 and version:
                paste.add_row(self.pip_show[0], version, n, "pip show", RANK_LIST)
                self.pip_show = None
                return True
            name = label
            if name.lower().endswith(" version"):
                name = name[: -len(" version")]
            if version and _WORD.fullmatch(name.strip()) and (
                self.section == "packages" or _of_interest(ce._norm_name(name)) or name.lower() == "python"
            ):
                paste.add_row(name, version, n, "package list" if self.section == "packages" else how,
                              RANK_LIST if self.section == "packages" else RANK_TOOL)
                return True
            return False
        if not value:
            if key == "gpu":
                self.gpu_list = _GpuGroup(how, RANK_TOOL, n)
                return True
            return False
        if value.lower().strip(" .<>") in p.empty_values:
            return True
        if key == "torch_version":
            self._torch_value(n, label, value, how)
            if self.section == "packages":
                version = _version_value(value)
                if version:
                    paste.add_row("torch", version, n, "package list", RANK_LIST)
        elif key == "gpu":
            name, cc = self._gpu_value(value)
            m = ce._COUNT_PREFIX.fullmatch(name)
            if m:
                count = min(int(m.group(1)), 64)
                paste.gpus(how, RANK_TOOL, n, [(i, m.group(2), cc) for i in range(count)])
            elif not _version_value(name):
                paste.gpus(how, RANK_TOOL, n, [(0, name, cc)])
        elif key == "device":
            self._device(n, value, how)
        elif key == "is_cuda_available":
            b = _BOOL_WORDS.get(value.split()[0].lower().strip(".,"))
            if b is not None:
                paste.put(key, str(b), n, how, RANK_TOOL)
        elif key == "os":
            self._os(n, value, how)
        elif key == "python_platform":
            if re.match(r"(?:Linux|Windows|macOS|Darwin)-", value):
                paste.put("python_platform", value.split()[0], n, how, RANK_TOOL)
            else:
                self._os(n, value, how)
        elif key == "python_version":
            version = _version_value(value.replace("Python", "").replace("python", ""))
            if version:
                paste.put(key, value, n, how, RANK_TOOL)
        elif key in ("nvidia_driver_version", "cuda_runtime_version", "cuda_compiled_version",
                     "cudnn_version"):
            version = _version_value(value)
            if version:
                paste.put(key, version, n, how, RANK_TOOL)
        else:
            paste.put(key, value, n, how, RANK_TOOL)
        return True

    def _torch_value(self, n: int, label: str, value: str, how: str) -> None:
        paste = self.paste
        version = _version_value(value)
        if not version:
            return
        paste.put("torch_version", version, n, how, RANK_TOOL)
        paren = re.search(r"\(([A-Za-z?]{1,20})\)", label)
        tail = re.search(r"\(([A-Za-z/]{1,10})\)\s{0,4}$", value)
        if paren and tail:
            word = _norm_label(paren.group(1))
            rule = self.p.availability.get(word)
            said = tail.group(1).lower()
            if rule is not None and said in rule[0]:
                paste.put("is_cuda_available", "True", n, how, RANK_TOOL)
            elif rule is not None and said in rule[1]:
                paste.put("is_cuda_available", "False", n, how, RANK_TOOL)

    def _device(self, n: int, value: str, how: str) -> None:
        m = self.p.device_string.match(value)
        if not m:
            return
        name, cc = self._gpu_value(m.group("gpu"))
        self.paste.gpus(how, RANK_TOOL, n, [(int(m.group("index")), name, cc)])
        self.paste.put("is_cuda_available", "True", n, how, RANK_TOOL)

    def _os(self, n: int, value: str, how: str) -> None:
        v = value.strip()
        low = v.lower()
        if re.match(r"(?:Linux|Windows|macOS|Darwin)-\d", v):
            self.paste.put("python_platform", v.split()[0], n, how, RANK_TOOL)
            return
        if low in ("nt", "win32", "win64", "windows"):
            v = "Windows"
        elif re.match(r"win ?(?:7|8|10|11)\b", low):
            v = "Windows " + v[3:].strip()
        elif low in ("linux", "posix linux"):
            v = "Linux"
        elif low == "darwin":
            v = "macOS"
        elif low == "posix":
            return
        self.paste.put("os", v, n, how, RANK_TOOL)

    def _lookup(self) -> bool:
        """Whether another GPU-name table lookup for a bare or prose line is allowed."""
        self.lookups += 1
        return self.lookups <= MAX_NAME_LOOKUPS

    def _gpu_value(self, value: str) -> tuple[str, Optional[float]]:
        name = value.strip()
        if "|" in name or not re.search(r"[A-Za-z]", name):
            return "", None  # a table's header or rule, not a name
        cc = None
        for suffix in self.p.gpu_suffixes:
            m = suffix.search(name)
            if m:
                if m.groupdict().get("cc"):
                    cc = float(m.group("cc"))
                name = name[: m.start()].strip()
        return name, cc

    def _package_row(self, n: int, s: str) -> bool:
        paste = self.paste
        words = [w for w in s.split() if w not in _CHECK_MARKS]
        if not words or len(words) > 5:
            return False
        first = words[0]
        if "==" in first and len(words) == 1:
            name, _, version = first.partition("==")
            if _version_value(version):
                paste.add_row(name, _version_value(version) or "", n, "pip freeze", RANK_LIST)
                return True
            return False
        if len(words) < 2 or not _WORD.fullmatch(first):
            return False
        version = _version_value(words[1])
        if not version or not words[1][:1].isdigit():
            return False
        rest = words[2:]
        name = ce._norm_name(first)
        if name != "python" and not _of_interest(name):
            return False
        if not rest:
            paste.add_row(first, version, n, "package list", RANK_LIST)
            return True
        if rest[0].startswith("@") or ce._looks_like_path(rest[0]):
            paste.add_row(first, version, n, "package list", RANK_LIST)
            return True
        if len(rest) <= 2 and _CONDA_BUILD.fullmatch(rest[0]) and any(c.isdigit() for c in rest[0]):
            channel = rest[1] if len(rest) > 1 else None
            if channel is not None and not _CONDA_BUILD.fullmatch(channel):
                return False
            paste.add_row(first, version, n, "conda list", RANK_LIST, build=rest[0], channel=channel)
            return True
        return False

    def _bare_line(self, n: int, s: str) -> None:
        if len(s) > 80 or ":" in s:
            return
        low = s.lower()
        if low.startswith(self.p.nvidia_brands) and self._lookup() and not any(
            g.rank <= RANK_LIST for g in self.paste.gpu_groups
        ):
            name, cc = self._gpu_value(s)
            if tables.cc_for_gpu_name(name) is not None:
                self.paste.gpus("bare line", RANK_LIST, n, [(0, name, cc)])
                return
        if low.startswith(self.p.amd_brands) and len(s.split()) <= 6:
            self.paste.gpus("bare line", RANK_LIST, n, [(0, s, None)])
            return
        if low.startswith(self.p.os_words) and len(s.split()) <= 5 and re.search(r"\d", s):
            self._os(n, s, "bare line")
            field_ = self.paste.fields.get("os")
            if field_ is not None and field_.line == n:
                self.paste.fields["os"] = Evidence(field_.value, n, "bare line", RANK_LIST)


_TOOL_MESSAGES = {
    "nvidia-smi-header": "nvidia-smi",
    "nvidia-smi-gpu": "nvidia-smi",
    "proc-driver-version": "/proc/driver/nvidia/version",
    "nvcc-release": "nvcc",
    "ultralytics-banner": "tool banner",
    "hip-no-binary": "HIP error",
    "xformers-built-for": "xformers warning",
}
_PATH_KINDS = {
    "site-packages-python": "site-packages path",
    "windows-site-packages-python": "site-packages path",
    "platform-string": "platform string",
    "wheel-file": "wheel file name",
    "index-url": "index URL",
    "pip-torch-pin": "install command",
    "conda-docker-tag": "image tag",
    "prose-torch": "prose",
    "labelled-version": "prose",
    "prose-gpu": "prose",
    "prose-python": "prose",
    "prose-torch-short": "prose",
    "prose-driver": "prose",
    "prose-ubuntu": "prose",
    "prose-centos": "prose",
    "prose-installer": "prose",
}
_ARCH_WORD = re.compile(r"(?:sm_|compute_)?(\d{1,2})\.?(\d)([a-z]?)")


def _arch_flags(value: str) -> list[str]:
    """detectron2's arch flags ("sm_37", "8.0", "3.5, 5.0, 6.0", "7.0+PTX") as sm_XY words."""
    out = []
    for word in value.replace(",", " ").replace(";", " ").split()[:64]:
        ptx = word.upper().endswith("+PTX")
        core = word[:-4] if ptx else word
        m = _ARCH_WORD.fullmatch(core.lower())
        if not m:
            return []
        kind = "compute" if core.lower().startswith("compute_") else "sm"
        out.append(f"{kind}_{m.group(1)}{m.group(2)}{m.group(3)}")
        if ptx:
            out.append(f"compute_{m.group(1)}{m.group(2)}")
    return out


def read_paste(text: str) -> Paste:
    """The evidence in a pasted text (no facts yet)."""
    return _Reader(text).read()
