"""One-line TypeErrors that name the argument of the wrong type.

pybind11 refuses an argument it cannot convert with "f(): incompatible function arguments. The
following argument types are supported: ..." (the whole signature and every value passed, over
several lines), or "Unable to cast Python instance ...". name_the_arguments wraps the
extension's functions and methods so that such a refusal becomes, for example,

    load_position_table: tensor_name must be a str or None, got int 5

An int of the right type that the C++ integer cannot hold (-1 or 2**64 for a count or an
offset) becomes a ValueError: "alibi_slopes: n_heads must be >= 0, got -1". The call itself is
unchanged (the wrapper only looks at the arguments after pybind11 refused them); an error it
cannot attribute to one argument is raised as pybind11 gave it.
"""
import functools
import inspect
import operator
import re

import numpy as np

_SIGNATURE = re.compile(r"^(\w*)\((.*)\) -> ")
_PYBIND_REFUSALS = ("incompatible function arguments", "incompatible constructor arguments",
                    "Unable to cast Python instance")


def _split_top_level(text):
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def _parameters(doc):
    """[(name, type text, keyword only)] from a pybind11 docstring's first line, or None."""
    match = _SIGNATURE.match(doc or "")
    if match is None:
        return None
    params, keyword_only = [], False
    for part in _split_top_level(match.group(2)):
        if part == "*":
            keyword_only = True
            continue
        name, _, rest = part.partition(":")
        params.append((name.strip(), rest.split("=")[0].strip(), keyword_only))
    return params


def _is_int(value):
    if isinstance(value, bool):
        return True  # pybind11 takes a bool for an int; not the mismatch to name
    try:
        operator.index(value)
        return True
    except TypeError:
        return False


# type text -> (test, what the message says is expected); unknown types are not judged
_SIMPLE = {
    "str": (lambda v: isinstance(v, (str, bytes)), "a str"),
    "int": (_is_int, "an int"),
    "float": (lambda v: _is_int(v) or isinstance(v, (float, np.floating)), "a float"),
    "bool": (lambda v: isinstance(v, (bool, np.bool_)), "a bool"),
    "numpy.ndarray": (lambda v: isinstance(v, np.ndarray), "a numpy array"),
    "dict": (lambda v: isinstance(v, dict), "a dict"),
    "Dict[str, str]": (lambda v: isinstance(v, dict) and all(
        isinstance(k, str) and isinstance(x, str) for k, x in v.items()),
        "a dict of str names to str values"),
}


def _expected(type_text):
    """(test, description) for a parameter's type text, or None."""
    optional = re.fullmatch(r"Optional\[(.*)\]", type_text)
    if optional:
        inner = _expected(optional.group(1))
        if inner is None:
            return None
        test, what = inner
        return (lambda v: v is None or test(v)), what + " or None"
    if type_text in _SIMPLE:
        return _SIMPLE[type_text]
    fixed = re.fullmatch(r"Tuple\[(.*)\]", type_text)
    if fixed:
        inner = [_expected(t) for t in _split_top_level(fixed.group(1))]
        if any(x is None for x in inner):
            return None
        whats = [w for _, w in inner]
        if len(set(whats)) == 1 and whats[0].startswith(("a ", "an ")):
            what = f"a tuple of {len(inner)} {whats[0].split(' ', 1)[1]}s"  # "a tuple of 2 ints"
        else:
            what = "a tuple of (" + ", ".join(whats) + ")"
        return (lambda v: isinstance(v, (tuple, list)) and len(v) == len(inner) and
                all(test(x) for (test, _), x in zip(inner, v))), what
    if type_text.startswith("numpy.ndarray["):
        return _SIMPLE["numpy.ndarray"]
    return None


def _got(value):
    text = repr(value)
    text = text if len(text) <= 60 and "\n" not in text else text.splitlines()[0][:57] + "..."
    hint = ""
    if type(value).__module__ == "torch" and type(value).__name__ == "Tensor":
        hint = " (pass t.numpy() for a CPU tensor, or use posemb.torch)"
    return f"{type(value).__name__} {text}{hint}"


class _OutOfRange(str):
    """A message about a value of the right type out of range: raised as ValueError."""


def _mismatch(op, params, args, kwargs, setter):
    """The message naming the first argument of a type the signature does not take (else an
    _OutOfRange naming an int the C++ integer cannot hold), or None.
    A property setter's signature is (arg0: the instance, arg1: the value): op names the value."""
    given = list(zip((p for p in params if not p[2]), args))
    by_name = {p[0]: p for p in params}
    given += [(by_name[k], v) for k, v in kwargs.items() if k in by_name]
    for i, ((name, type_text, _), value) in enumerate(given):
        if name == "self" or (setter and i == 0):
            continue
        expected = _expected(type_text)
        if expected is not None and not expected[0](value):
            subject = op if setter else f"{op}: {name}"
            return f"{subject} must be {expected[1]}, got {_got(value)}"
    # Every argument of the right type: an int pybind11 could not convert is out of range for the
    # C++ integer (a count or an offset, unsigned: -1 or 2**64 would otherwise be "incompatible
    # function arguments").
    for i, ((name, type_text, _), value) in enumerate(given):
        if name == "self" or (setter and i == 0):
            continue
        subject = op if setter else f"{op}: {name}"
        if type_text in ("int", "Optional[int]"):
            if _is_int(value) and not isinstance(value, bool):
                v = operator.index(value)
                if v < 0:
                    return _OutOfRange(f"{subject} must be >= 0, got {v}")
                if v >= 2**64:
                    return _OutOfRange(f"{subject} must be below 2**64, got {v}")
        elif re.fullmatch(r"(Optional\[)?Tuple\[int(, int)*\]\]?", type_text):
            if isinstance(value, (tuple, list)) and all(_is_int(x) for x in value):
                for x in value:
                    v = operator.index(x)
                    if v < 0 or v >= 2**64:
                        return _OutOfRange(f"{subject} must hold whole numbers in [0, 2**64), "
                                           f"got {tuple(value)!r}")
    return None


def _wrap(fn, op, setter=False):
    params = _parameters(fn.__doc__)
    if params is None:
        return fn

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            if not any(r in str(e) for r in _PYBIND_REFUSALS):
                raise
            message = _mismatch(op, params, args, kwargs, setter)
            if message is None:
                raise
            if isinstance(message, _OutOfRange):
                raise ValueError(str(message)) from None
            raise TypeError(message) from None

    return call


def _is_extension_function(obj):
    return type(obj).__name__ == "builtin_function_or_method"


def _wrap_class(cls):
    for attr, value in list(vars(cls).items()):
        if isinstance(value, staticmethod) and _is_extension_function(value.__func__):
            setattr(cls, attr, staticmethod(_wrap(value.__func__, f"{cls.__name__}.{attr}")))
        elif type(value).__name__ == "instancemethod":
            inner = value.__func__
            op = f"{cls.__name__}.{attr}" if attr != "__init__" else cls.__name__
            wrapped = _wrap(inner, op)
            if wrapped is not inner:
                setattr(cls, attr, wrapped)
        elif isinstance(value, property) and value.fset is not None:
            fset = getattr(value.fset, "__func__", value.fset)  # an instancemethod or a function
            if _is_extension_function(fset):
                op = f"{cls.__name__}.{attr}"
                setattr(cls, attr, property(value.fget, _wrap(fset, op, setter=True),
                                            value.fdel, value.__doc__))


def name_the_arguments(namespace):
    """Wraps the extension functions and classes in namespace (a module's globals) in place."""
    for name, value in list(namespace.items()):
        if name.startswith("_"):
            continue
        if _is_extension_function(value):
            namespace[name] = _wrap(value, name)
        elif inspect.isclass(value) and type(value).__name__ == "pybind11_type":
            _wrap_class(value)
