"""An MCP server's form (elicitation), asked in the cell one question at a time.

A server may ask the user something mid-call: a message and a few fields (``mcp/client_features``
turns its schema into a ``Form``). The notebook asks through the same machinery as the agent's
``ask_user`` (``user_questions.py``): a small form in the running cell, a prompt in terminal
IPython, and nobody there means the form is declined. Each field is one question — a choice
offers its options, yes/no its two, text and numbers a text field — and shows the server's
default, which an empty answer keeps. An unanswered question (Stop, an interrupt, nobody there)
declines the whole form: a server never gets an answer the user did not give.

A field that looks like a secret (a password, an API key: ``client_features.looks_secret``) —
which the MCP specification forbids servers to ask for in a form — is flagged with a warning,
offers to decline the form, is typed masked (a password box; ``getpass`` in a terminal), shown
as ``••••`` in the answered line, and its answer is redacted from every later tool result and
prompt (``tools/redact.remember_secret``), so a server that echoes it reaches neither the model,
the conversation file nor the saved record. What the user types into any other field goes to the
server only too: the answered line (saved with the notebook) says it was answered and how many
characters it had; a choice among the server's options is shown as chosen.
"""

from __future__ import annotations

from ...mcp.client_features import Form, FormAnswer, FormAsker, FormField
from ...tools.redact import remember_secret
from .user_questions import Question, UserQuestions

#: The answer that keeps a field's default (or leaves an optional one out).
KEEP = "(keep the default)"
SKIP = "(leave empty)"
#: The answer that declines the whole form (offered for a secret field).
DECLINE = "(decline the form)"
#: What a field that looks like a secret says (``client_features.looks_secret``).
SECRET_WARNING = (
    "⚠ {server} asks for a secret ({title}). The MCP specification forbids servers to ask for "
    "passwords, API keys or tokens in a form; decline unless you trust this server. What you "
    "type is masked, sent to the server only, and redacted from everything the model and the "
    "records see."
)


def field_question(form: Form, field: FormField, position: int) -> Question:
    """The question that asks for ``field``, the ``position``-th of ``form`` (the first also
    says which server asks, and its message)."""
    about = f" — {field.description}" if field.description else ""
    head = f"{form.server} asks: {form.message}\n" if position == 0 else ""
    prompt = f"{head}{field.title}{about}"
    if field.kind == "choice":
        options = field.options
    elif field.kind == "boolean":
        options = ("yes", "no")
    else:
        options = ()
    if field.secret:
        # the server's default for a secret is not shown, and the form is easy to decline
        warning = SECRET_WARNING.format(server=form.server, title=field.title)
        return Question(f"{prompt}\n{warning}", (DECLINE,), secret=True)
    if field.default is not None:
        prompt += f" (default: {field.default})"
        options = (*options, KEEP) if options else (KEEP,)
    elif not field.required:
        options = (*options, SKIP) if options else ()
    # what the user types goes to the server only: the cell's record says it was answered
    return Question(prompt, tuple(options), private=True)


def mcp_form_asker(questions: UserQuestions) -> FormAsker:
    """A ``FormAsker`` that puts each field of a server's form to the user."""

    async def ask(form: Form) -> FormAnswer:
        values: dict[str, object] = {}
        for position, field in enumerate(form.fields):
            answer = await questions.ask(field_question(form, field, position))
            if answer.text is None or (field.secret and answer.text == DECLINE):
                return "decline"
            text = answer.text.strip()
            if field.secret:
                remember_secret(text, f"{form.server} {field.name}")
            if text in (KEEP, SKIP, ""):
                continue  # the default stays (``coerce_answer`` fills it in)
            values[field.name] = (text == "yes") if field.kind == "boolean" else text
        return values

    return ask
