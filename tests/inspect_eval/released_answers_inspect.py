"""A stand-in Inspect model provider that answers each sample with a given text (no model call), for the toolkit tests
of `vqalib score`. Registered as Inspect documents for model API extensions: a ``@modelapi`` in a module named by an
entry point of the group ``inspect_ai`` (``released_answers_inspect-1.dist-info/entry_points.txt`` beside this file),
so with this folder on ``PYTHONPATH``

    inspect eval TASK.py --model released_answers/llava -M answers_file=ANSWERS.json

runs it. ANSWERS.json maps each sample's ``item_id`` (its metadata) to the answer.
"""

import json

from inspect_ai.model import ChatMessageUser, ContentImage, GenerateConfig, ModelAPI, ModelOutput, modelapi
from inspect_ai.solver._task_state import sample_state  # the sample being answered: no public accessor yet


class ReleasedAnswers(ModelAPI):
    """The answer given for the current sample's item_id."""

    def __init__(self, model_name, base_url=None, api_key=None, config=GenerateConfig(), **model_args):
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config)
        with open(model_args["answers_file"], encoding="utf-8") as handle:
            self.answers = json.load(handle)

    async def generate(self, input, tools, tool_choice, config):
        user = [m for m in input if isinstance(m, ChatMessageUser)]
        images = [c for m in user if not isinstance(m.content, str) for c in m.content if isinstance(c, ContentImage)]
        assert images, "the sample's message carries no image"  # the task's image reaches the model as for a real one
        answer = self.answers[sample_state().metadata["item_id"]]
        return ModelOutput.from_content(model=self.model_name, content=answer)


@modelapi(name="released_answers")
def released_answers():
    return ReleasedAnswers
