"""The ShiftBench leaderboard, one job per module:

- ``board``: load and validate the submissions (bench.submissions.record keeps each one's outcome by its
  files' checksums), their cells, groups (protocol x model pair), filters and decisions (``bench.core.compare``'s);
- ``decided``: a group's decisions kept beside the validation record, so an unchanged board bootstraps nothing;
- ``ranking``: a group's ranking table and its verdict in one line;
- ``columns``: the columns, their definitions, the one number format, the view every renderer shows;
- ``links``: paper and source-code links;  ``context``: what was run, in words;
- ``cards``: the protocol and model-pair cards and About;
- ``plots``: the numbers behind the pictures;  ``figures``: the pictures;
- ``render``: HTML (jinja2, autoescape);  ``uploads``: the Submit tab's checks;
- ``app``: the Gradio app;  ``static``: the static page;  ``core``: the public API, gathered."""
