"""An exercise's starter file as a Jupyter notebook: what ``ppo-submit starter SLUG --notebook``
writes and the learner's dashboard page downloads (``/dashboard/starter/SLUG.ipynb``), one
builder for both sides.

The cells, in order: the exercise's description and the function's contract (its docstring)
as markdown; the imports; the function to fill in; the self-tests (the starter's
``if __name__ == "__main__":`` block); the cell that submits. The starter file is the only
input, read with ``ast`` (nothing runs); nbformat writes the notebook.
"""

from __future__ import annotations

import ast
import textwrap

from notebook_format.reader import load_nbformat

#: Paragraphs of a starter's docstring about running it as a file, replaced for a notebook.
_FILE_WORDS = ("this_file.py", "ppo-submit this")


def _lines(source: str, node: ast.AST) -> list[str]:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])  # type: ignore[attr-defined]
    return source.splitlines()[first - 1 : node.end_lineno]  # type: ignore[attr-defined]


def _signature(node: ast.FunctionDef) -> str:
    return f"{node.name}({ast.unparse(node.args)})"


def _function_cell(source: str, node: ast.FunctionDef) -> str:
    """The function with its docstring cut to its first line (the whole contract is above)."""
    lines = _lines(source, node)
    doc = (
        node.body[0]
        if node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(getattr(node.body[0], "value", None), ast.Constant)
        else None
    )
    if doc is None:
        return "\n".join(lines)
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    first, last = doc.lineno - start, (doc.end_lineno or doc.lineno) - start
    indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
    summary = (ast.get_docstring(node) or "").strip().split("\n", 1)[0].replace('"""', "'''")
    short = f'{indent}"""{summary} (The contract is in the markdown cell above.)"""'
    return "\n".join([*lines[:first], short, *lines[last + 1 :]])


def _markdown(module_doc: str, node: ast.FunctionDef) -> str:
    title, _, rest = module_doc.strip().partition("\n")
    paragraphs = [p.strip() for p in rest.strip().split("\n\n") if p.strip()]
    kept = [" ".join(p.split()) for p in paragraphs if not any(word in p for word in _FILE_WORDS)]
    howto = (
        "Fill in the `# YOUR CODE` blocks of the function's cell, run the self-test cell, then run the "
        "last cell: it sends the function as the kernel has it, with the helpers it uses."
    )
    doc = (ast.get_docstring(node) or "").strip()
    summary, _, details = doc.partition("\n")
    parts = [f"# {title.strip()}", *kept, howto, f"## `{_signature(node)}`", summary.strip()]
    if details.strip():
        parts.append("```text\n" + textwrap.dedent(details).strip("\n") + "\n```")
    return "\n\n".join(p for p in parts if p)


def _is_main_block(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    )


def starter_notebook(starter: str, function: str) -> str:
    """The notebook (nbformat 4 JSON) for the starter file ``starter`` of ``function``.

    Raises ``SourceError`` when nbformat is not installed.
    """
    nbformat = load_nbformat()
    v4 = nbformat.v4
    tree = ast.parse(starter)
    module_doc = ast.get_docstring(tree) or ""
    target = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function), None)
    if target is None:  # not a starter of ours: the whole file in one cell
        return nbformat.writes(v4.new_notebook(cells=[v4.new_code_cell(starter.rstrip("\n"))])) + "\n"
    setup, tests = [], []
    for node in tree.body:
        if node is target or (node is tree.body[0] and module_doc and isinstance(node, ast.Expr)):
            continue
        if _is_main_block(node):
            # from the line after `if __name__ == "__main__":`, so leading comments stay
            body = starter.splitlines()[node.lineno : node.end_lineno]
            tests.append(textwrap.dedent("\n".join(body)))
        else:
            setup.append("\n".join(_lines(starter, node)))
    cells = [v4.new_markdown_cell(_markdown(module_doc, target))]
    if setup:
        cells.append(v4.new_code_cell("\n".join(setup)))
    cells.append(v4.new_code_cell(_function_cell(starter, target)))
    if tests:
        cells.append(v4.new_markdown_cell("Self-tests: they pass once the function is written."))
        cells.append(v4.new_code_cell("\n".join(t.strip("\n") for t in tests)))
    cells.append(
        v4.new_markdown_cell(
            "Submit: log in once with `ppo-submit login` in a terminal, or set `PPO_GRADER_URL` and "
            "`PPO_GRADER_TOKEN` (or pass `token=` and `server=`). The feedback appears below the cell."
        )
    )
    cells.append(v4.new_code_cell(f"from ppo_submit import notebook\n\nnotebook.submit({function})"))
    metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    }
    return nbformat.writes(v4.new_notebook(cells=cells, metadata=metadata)) + "\n"
