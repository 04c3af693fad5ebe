// The status page: draws the models' facts, per-target errors and
// intervals, learning curves and learned metrics from the report the page
// came with, then from /api/status every second (plain DOM and SVG; every
// name from the server is set as text, never parsed as HTML). The models
// being streamed come first; every figure is labelled, explained on hover
// and in the legend, and written in one notation.
'use strict';

const POLL_MILLISECONDS = 1000;
const LATENCY_WINDOW_SECONDS = 60;
// Details (curves, metric) are shown for every model up to this many;
// past it, for those clicked in the table (the server's first report
// follows the same rule: kStatusPageModelsDetailedUnasked).
const AUTO_SHOWN_MODELS = 6;
// A model whose newest sample arrived at most this long ago is streaming.
const STREAMING_SECONDS = 5;
const COLORS = ['#2f6fdf', '#e07b24', '#2e9e5b', '#c2417a', '#7a5cc7',
                '#8c6d31', '#1b9aaa', '#d64541'];
const SVG = 'http://www.w3.org/2000/svg';

// Models whose details the reader chose: clicked in the table, kept in
// the address (#models=a,b) so that a link shows the same.
const shown = new Set(
    decodeURIComponent(location.hash.replace(/^#models=/, ''))
        .split(',').filter((name) => name && !name.startsWith('#')));
// Models at the last reading; none read yet: ask for no details first, so
// a server with thousands of models is not asked for all their curves.
let modelCount = Infinity;
const latencyReadings = [];  // {time, methods: Map(name -> histogram)}

function element(tag, attributes = {}, text = null) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    node.setAttribute(name, value);
  }
  if (text !== null) node.textContent = text;
  return node;
}

function svgElement(tag, attributes = {}, text = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) {
    node.setAttribute(name, value);
  }
  if (text !== null) node.textContent = text;
  return node;
}

function formatCount(value) {
  return value === null || value === undefined ? '—'
                                               : value.toLocaleString('en-US');
}

// Every number in one notation: plain decimals, three significant digits,
// thousands grouped (0.000123, 0.0452, 1.23, 12,300); never an exponent.
const SMALLEST_SHOWN = 1e-6;
const NUMBER_FORMAT = new Intl.NumberFormat('en-US',
                                            {maximumSignificantDigits: 3});

function formatNumber(value) {
  if (value === null || value === undefined) return '—';
  if (value !== 0 && Math.abs(value) < SMALLEST_SHOWN) {
    return `${value < 0 ? '−' : ''}< ${NUMBER_FORMAT.format(SMALLEST_SHOWN)}`;
  }
  return NUMBER_FORMAT.format(value);
}

// ---- what each figure is: its label and its explanation (on hover, and
// in the legend under the models) ----

const FIGURES = {
  model: ['model', 'The model\'s name. The models being streamed (a sample ' +
          `in the last ${STREAMING_SECONDS} s) come first; click one to ` +
          'show or hide its details.'],
  arriving: ['samples arriving', 'How long ago the newest sample arrived ' +
             '(over Learn or Ingest), and how many arrived per second ' +
             'between the last two readings of this page.'],
  metric: ['metric', 'The metric the model learns: mlkr, gw (gradient ' +
           'weights), egop, glml, or auto (the candidates compared).'],
  samples: ['samples learned', 'Samples learned since the model was ' +
            'created.'],
  capacity: ['stored / capacity', 'Samples kept in the index, of the most ' +
             'its capacity policy keeps (unbounded: no limit).'],
  answers: ['answers\' nMSE', 'The Learn answers as the clients received ' +
            'them, each scored against its own sample: made from the model ' +
            'as it stood, learn lag included. nMSE is the mean squared ' +
            'error over the target\'s variance: 0 is exact, 1 is no better ' +
            'than answering the mean. All the answers since this server ' +
            'hosted the model, and the recent ones.'],
  prequential: ['prequential nMSE', 'Each sample predicted by the model ' +
                'just before it learned it, with nothing left out.'],
  honest: ['honest nMSE', 'Each sample predicted without the samples just ' +
           'before it (Tuning.honest_lag): the error on new states like ' +
           'those streamed so far. It chooses k or the bandwidth and ' +
           'calibrates the intervals; it does not foresee a part of the ' +
           'task the model has not seen.'],
  interval: ['interval', 'The queries\' interval at the model\'s level: ' +
             'its half width now, and the fraction of the samples scored ' +
             'that fell within it.'],
  answerInterval: ['answers\' interval', 'The same for the intervals of the ' +
                   'Learn answers sent (calibrated on their own errors).'],
  ahead: ['predictions ahead', 'Predictions sent ahead of their ticks, ' +
          'scored against their ticks\' samples: nMSE, and the fraction ' +
          'within their interval.'],
  candidates: ['candidates\' weights: queries', 'A model that combines ' +
               'its candidates: each one\'s weight in the queries\' ' +
               'predictions.'],
  answerCandidates: ['candidates\' weights: answers', 'The same in the ' +
                     'Learn answers (weighed by the answers\' own errors).'],
  regressor: ['regressor', 'What the target is predicted with now.'],
  lag: ['learn lag', 'Samples acknowledged and not learned yet, and how ' +
        'long the oldest of them has waited.'],
  pauses: ['learning paused for background work', 'How often learning ' +
           'waited at a take-over point for background work the stream ' +
           'outran (an MLKR fit, a metric refresh, an index rebuild), how ' +
           'long in all, and the longest wait. Samples queue meanwhile; ' +
           'answers go on from the model as it stood.'],
  snapshot: ['snapshot age', 'Time since the model\'s last snapshot, and ' +
             'the samples learned since (a restart replays those from the ' +
             'write-ahead log).'],
  memory: ['memory', 'The model\'s index, samples and learned state.'],
  answersSent: ['Learn answers sent', 'The predictions this server sent in ' +
                'answer to Learn messages for the model, each scored ' +
                'against its own sample (the answers\' nMSE).'],
};

// A header cell or term with its figure's label, explained on hover.
function labelled(tag, figure, attributes = {}, label = null) {
  const [name, explanation] = FIGURES[figure];
  return element(tag, {...attributes, title: explanation,
                       'data-figure': figure}, label ?? name);
}

function renderGlossary() {
  const list = document.getElementById('glossary-terms');
  if (list.childElementCount > 0) return;
  for (const figure of Object.keys(FIGURES)) {
    list.append(labelled('dt', figure),
                element('dd', {}, FIGURES[figure][1]));
  }
}

function formatSeconds(seconds) {
  if (seconds === null || seconds === undefined) return '—';
  if (seconds < 1e-3) return `${(seconds * 1e6).toFixed(0)} µs`;
  if (seconds < 1) return `${(seconds * 1e3).toFixed(1)} ms`;
  if (seconds < 120) return `${seconds.toFixed(1)} s`;
  if (seconds < 7200) return `${(seconds / 60).toFixed(1)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

function formatBytes(bytes) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let unit = 0;
  while (bytes >= 1024 && unit < units.length - 1) {
    bytes /= 1024;
    unit += 1;
  }
  return `${bytes.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

function showProblem(message) {
  const problem = document.getElementById('problem');
  problem.hidden = message === null;
  problem.textContent = message ?? '';
}

// ---- latency: percentiles of the calls of the last minute ----

// The q-quantile of a histogram (cumulative counts per upper bound, then
// the total), interpolated within its bucket as Prometheus'
// histogram_quantile does; Infinity past the last bound.
function quantile(q, bounds, cumulative, count) {
  if (count === 0) return null;
  const rank = q * count;
  for (let i = 0; i < bounds.length; i += 1) {
    if (cumulative[i] >= rank) {
      const lower = i === 0 ? 0 : bounds[i - 1];
      const below = i === 0 ? 0 : cumulative[i - 1];
      const inBucket = cumulative[i] - below;
      if (inBucket === 0) return bounds[i];
      return lower + (bounds[i] - lower) * (rank - below) / inBucket;
    }
  }
  return Infinity;
}

function renderLatency(latency) {
  const now = Date.now() / 1000;
  const methods = new Map(latency.methods.map((m) => [m.method, m]));
  latencyReadings.push({time: now, methods});
  while (latencyReadings.length > 1 &&
         now - latencyReadings[1].time >= LATENCY_WINDOW_SECONDS) {
    latencyReadings.shift();
  }
  const oldest = latencyReadings[0];
  const windowSeconds = now - oldest.time;
  const since = latencyReadings.length > 1;
  document.getElementById('latency-window').textContent = since ?
      `calls of the last ${Math.round(windowSeconds)} s` :
      'every call since the server started';
  const body = document.querySelector('#latency tbody');
  body.replaceChildren();
  for (const method of latency.methods) {
    const before = since ? oldest.methods.get(method.method) : undefined;
    const cumulative = method.cumulative.map(
        (c, i) => c - (before ? before.cumulative[i] : 0));
    const count = method.count - (before ? before.count : 0);
    const row = element('tr', {'data-method': method.method,
                               'data-per': method.per});
    // A stream's row counts its messages, each answered as it runs.
    const name = method.per === 'message' ?
        `${method.method} (per message)` : method.method;
    row.append(element('td', {}, name),
               element('td', {class: 'num'}, formatCount(count)));
    for (const q of [0.5, 0.9, 0.99]) {
      const value = quantile(q, latency.bounds_seconds, cumulative, count);
      const text = value === Infinity ?
          `> ${formatSeconds(latency.bounds_seconds.at(-1))}` :
          formatSeconds(value);
      row.append(element('td', {class: 'num', 'data-quantile': q,
                                 'data-seconds': value ?? ''}, text));
    }
    body.append(row);
  }
  if (latency.methods.length === 0) {
    const row = element('tr');
    row.append(element('td', {colspan: 5, class: 'empty'}, 'no calls yet'));
    body.append(row);
  }
}

// ---- the overview table ----

function capacityText(model) {
  const limit = model.capacity.limit;
  const stored = formatCount(model.samples_stored);
  if (limit === null) return `${stored} (unbounded)`;
  const percent = (100 * model.samples_stored / limit).toFixed(1);
  return `${stored} / ${formatCount(limit)} (${percent} %)`;
}

function lagText(model) {
  const lag = model.learn_lag;
  if (lag.samples === 0) return 'caught up';
  const text = `${formatCount(lag.samples)} samples · ` +
      `${formatSeconds(lag.seconds)}`;
  const stopped = lag.waits.current_seconds;
  if (stopped === 0) return text;
  return `${text} · paused ${formatSeconds(stopped)} for background work`;
}

// Learning's waits for background work at its take-over points.
function pausesText(model) {
  const waits = model.learn_lag.waits;
  if (waits.count === 0) return 'never';
  return `${formatCount(waits.count)} ${waits.count === 1 ? 'time' : 'times'}` +
      `, ${formatSeconds(waits.seconds)} in all, the longest ` +
      `${formatSeconds(waits.longest_seconds)}`;
}

function meanOf(values) {
  const known = values.filter((v) => v !== null && v !== undefined);
  if (known.length === 0) return null;
  return known.reduce((a, b) => a + b, 0) / known.length;
}

// Samples learned at the previous reading, to tell how fast they arrive.
let previousReading = null;  // {time, samples: Map(name -> samples_seen)}
let arrivalRates = new Map();  // name -> samples per second

function noteArrivals(models) {
  const now = Date.now() / 1000;
  const samples = new Map(models.map((m) => [m.name, m.samples_seen]));
  if (previousReading !== null && now - previousReading.time >= 0.5) {
    arrivalRates = new Map();
    for (const [name, seen] of samples) {
      const before = previousReading.samples.get(name);
      if (before !== undefined && seen >= before) {
        arrivalRates.set(name, (seen - before) / (now - previousReading.time));
      }
    }
  }
  if (previousReading === null || now - previousReading.time >= 0.5) {
    previousReading = {time: now, samples};
  }
}

function streaming(model) {
  return model.last_sample_seconds !== null &&
         model.last_sample_seconds <= STREAMING_SECONDS;
}

function arrivingText(model) {
  if (model.last_sample_seconds === null) return 'none since the server started';
  const rate = arrivalRates.get(model.name);
  const ago = `${formatSeconds(model.last_sample_seconds)} ago`;
  if (!streaming(model) || rate === undefined) return `last ${ago}`;
  return `${formatNumber(rate)} a second · last ${ago}`;
}

// The models being streamed first, then the others, each by name.
function inShowingOrder(models) {
  const byName = (a, b) => (a.name < b.name ? -1 : +(a.name > b.name));
  return [...models].sort((a, b) =>
    (streaming(b) - streaming(a)) || byName(a, b));
}

// A figure kept per target as its mean: "0.0123 (mean of 7)".
function meanText(values, targets) {
  const mean = formatNumber(meanOf(values));
  return targets.length === 1 ? mean : `${mean} (mean of ${targets.length})`;
}

function answersText(model) {
  if (model.answers.sent === 0) return 'no answers yet';
  return meanText(model.answers.nmse, model.targets);
}

function detailsShown(name) {
  return modelCount <= AUTO_SHOWN_MODELS || shown.has(name);
}

const OVERVIEW_COLUMNS = [
  ['model', {}, (m) => m.name],
  ['arriving', {}, arrivingText],
  ['metric', {}, (m) => m.metric],
  ['samples', {class: 'num'}, (m) => formatCount(m.samples_seen)],
  ['capacity', {class: 'num'}, capacityText],
  ['answers', {class: 'num'}, answersText],
  ['honest', {class: 'num'}, (m) => meanText(m.honest_nmse, m.targets)],
  ['lag', {class: 'num'}, lagText],
  ['snapshot', {class: 'num'},
   (m) => m.snapshot ? formatSeconds(m.snapshot.age_seconds) : '—'],
];

function renderOverview(models) {
  const head = document.querySelector('#overview thead');
  if (head.childElementCount === 0) {
    const row = element('tr');
    for (const [figure, attributes] of OVERVIEW_COLUMNS) {
      row.append(labelled('th', figure, attributes));
    }
    head.append(row);
  }
  const body = document.querySelector('#overview tbody');
  body.replaceChildren();
  for (const model of models) {
    const row = element('tr', {'data-model': model.name});
    if (detailsShown(model.name)) row.classList.add('shown');
    if (streaming(model)) row.classList.add('streaming');
    for (const [figure, attributes, text] of OVERVIEW_COLUMNS) {
      row.append(element('td', {...attributes, 'data-figure': figure},
                         text(model)));
    }
    row.addEventListener('click', () => {
      if (shown.has(model.name)) {
        shown.delete(model.name);
      } else {
        shown.add(model.name);
      }
      history.replaceState(null, '',
                           '#models=' + encodeURIComponent([...shown].join(',')));
      poll();
    });
    body.append(row);
  }
  if (models.length === 0) {
    const row = element('tr');
    row.append(element('td', {colspan: OVERVIEW_COLUMNS.length, class: 'empty'},
                        'no models yet: create one with the API or the CLI'));
    body.append(row);
  }
}

// ---- the cluster (cluster mode only) ----

function replicaState(replica) {
  if (replica.fell_behind) {
    return 'fell behind its log (hosted again from the newest snapshot)';
  }
  if (replica.catching_up) {
    return 'catching up on its log (reads and writes go to the others)';
  }
  return 'following its log';
}

// Where this server snapshots the model: the last log entry its newest
// snapshot includes (a crash replays the log after it), and a whole one
// being put meanwhile.
function snapshotThrough(replica) {
  if (!replica.snapshot_through && !replica.whole_snapshot_being_put) {
    return '—';
  }
  const through = replica.snapshot_through ?
      formatCount(replica.snapshot_through) :
      'none yet';
  return replica.whole_snapshot_being_put ?
      `${through} (a whole one of ` +
          `${formatCount(replica.whole_snapshot_being_put)} being put)` :
      through;
}

function renderCluster(cluster) {
  const section = document.getElementById('cluster-section');
  section.hidden = !cluster;
  if (!cluster) return;
  const failures = [
    ['heartbeat', cluster.heartbeat_failures],
    ['reconcile', cluster.reconcile_failures],
    ['hosting', cluster.host_failures],
    ['snapshot', cluster.snapshot_failures],
  ].filter(([, count]) => count > 0)
      .map(([what, count]) => `${formatCount(count)} ${what}`);
  document.getElementById('cluster-summary').textContent =
      `${formatCount(cluster.live_servers)} live servers · ` +
      `${formatCount(cluster.replicas.length)} replicas here · ` +
      (cluster.not_hosted > 0 ?
           `${formatCount(cluster.not_hosted)} placed here not hosted yet ` +
               '(retried) · ' :
           '') +
      `${formatCount(cluster.snapshots)} snapshots put · ` +
      `${formatCount(cluster.models_moved)} models moved by this server · ` +
      (failures.length ? `failures: ${failures.join(', ')}` : 'no failures');
  const body = document.querySelector('#cluster tbody');
  body.replaceChildren();
  for (const replica of cluster.replicas) {
    const row = element('tr', {'data-model': replica.model});
    const healthy = !replica.fell_behind && !replica.catching_up;
    row.append(
        element('td', {}, replica.model),
        element('td', {class: 'num'}, formatCount(replica.applied)),
        element('td', {class: 'num'}, snapshotThrough(replica)),
        element('td', healthy ? {} : {class: 'warn'}, replicaState(replica)));
    body.append(row);
  }
  if (cluster.replicas.length === 0) {
    const row = element('tr');
    row.append(element('td', {colspan: 4, class: 'empty'},
                        'no replica on this server'));
    body.append(row);
  }
}

// ---- learning curves ----

function logTicks(low, high) {
  const ticks = [];
  for (let e = Math.floor(Math.log10(low)); e <= Math.ceil(Math.log10(high));
       e += 1) {
    ticks.push(10 ** e);
  }
  return ticks;
}

// One chart: every target's prequential (solid) and honest (dashed)
// nMSE against the samples learned, both axes logarithmic.
function curveChart(model) {
  const width = 520, height = 240;
  const left = 52, right = 24, top = 22, bottom = 34;
  const curve = model.curve;
  const svg = svgElement('svg', {viewBox: `0 0 ${width} ${height}`,
                                 class: 'curves', role: 'img',
                                 'aria-label': `learning curves of ${model.name}`});
  const values = [...curve.prequential_nmse.flat(), ...curve.honest_nmse.flat()]
                     .filter((v) => v !== null && v > 0);
  if (curve.samples.length === 0 || values.length === 0) {
    svg.append(svgElement('text', {x: width / 2, y: height / 2,
                                   'text-anchor': 'middle'},
                          'no errors known yet'));
    return svg;
  }
  const yLow = Math.max(1e-6, 10 ** Math.floor(Math.log10(Math.min(...values))));
  const yHigh = Math.max(yLow * 10,
                         10 ** Math.ceil(Math.log10(Math.max(...values))));
  const x = samplesAxis(svg, curve.samples, {width, height, left, right, bottom});
  const y = (v) => top + (height - top - bottom) *
      (Math.log10(yHigh) - Math.log10(Math.min(Math.max(v, yLow), yHigh))) /
      (Math.log10(yHigh) - Math.log10(yLow));
  for (const tick of logTicks(yLow, yHigh)) {
    svg.append(svgElement('line', {class: 'axis', x1: left, x2: width - right,
                                   y1: y(tick), y2: y(tick)}),
               svgElement('text', {x: left - 6, y: y(tick) + 4,
                                   'text-anchor': 'end'},
                          formatNumber(10 ** Math.round(Math.log10(tick)))));
  }
  svg.append(svgElement('text', {x: 8, y: 14}, 'nMSE (log)'));
  model.targets.forEach((target, t) => {
    for (const kind of ['prequential', 'honest']) {
      svg.append(svgElement('path', {
        class: `curve ${kind}`,
        d: linePath(curve.samples, curve[`${kind}_nmse`][t], x, y),
        stroke: COLORS[t % COLORS.length],
        'data-target': target, 'data-kind': kind}));
    }
  });
  return svg;
}

// The samples-learned axis of a chart against the curve's points: on a
// log scale once they span a decade, else a linear one. Draws its ticks
// and label, and returns the position of a sample count.
function samplesAxis(svg, samples, {width, height, left, right, bottom}) {
  const first = Math.max(1, samples[0]);
  const last = Math.max(first + 1, samples.at(-1));
  const logarithmic = last >= 10 * first;
  const scale = logarithmic ? Math.log10 : (s) => s;
  const x = (s) => left + (width - left - right) *
      (scale(Math.max(s, first)) - scale(first)) / (scale(last) - scale(first));
  const ticks = logarithmic ? logTicks(first, last) :
      [0, 0.5, 1].map((f) => Math.round(first + f * (last - first)));
  for (const tick of ticks) {
    if (tick < first || tick > last) continue;
    svg.append(svgElement('text', {x: x(tick), y: height - bottom + 16,
                                   'text-anchor': 'middle'},
                          formatCount(tick)));
  }
  svg.append(svgElement('text', {x: (left + width - right) / 2,
                                 y: height - 4, 'text-anchor': 'middle'},
                        'samples learned'));
  return x;
}

// An SVG path through the points (xs[i], values[i]), broken where a value
// is null.
function linePath(xs, values, x, y) {
  let d = '';
  let pen = 'M';
  values.forEach((value, i) => {
    if (value === null) {
      pen = 'M';
      return;
    }
    d += `${pen}${x(xs[i]).toFixed(1)},${y(value).toFixed(1)}`;
    pen = 'L';
  });
  return d;
}

// ---- intervals ----

function percent(fraction) {
  return fraction === null ? '—' : `${(100 * fraction).toFixed(1)} %`;
}

// Coverage is drawn over at least this many samples back from each point
// (between two early points, a handful of samples says little).
const COVERAGE_WINDOW_SAMPLES = 200;

// At each point, the coverage over the samples since the latest point at
// least COVERAGE_WINDOW_SAMPLES before it (or since the first): from the
// coverage between consecutive points, added up as counts.
function trailingCoverage(samples, between) {
  const covered = [0], scored = [0];  // cumulative, before point i
  samples.forEach((s, i) => {
    const count = s - (i === 0 ? 0 : samples[i - 1]);
    const known = between[i] !== null;
    covered.push(covered[i] + (known ? between[i] * count : 0));
    scored.push(scored[i] + (known ? count : 0));
  });
  let start = 0;
  return samples.map((s, i) => {
    while (start < i && s - samples[start] >= COVERAGE_WINDOW_SAMPLES &&
           s - samples[start + 1] >= COVERAGE_WINDOW_SAMPLES) {
      start += 1;
    }
    // Points start + 1 .. i: the samples after point `start`, or from the
    // beginning while no point is far enough back.
    const from = s - samples[start] >= COVERAGE_WINDOW_SAMPLES ? start + 1 : 0;
    const n = scored[i + 1] - scored[from];
    return n > 0 ? (covered[i + 1] - covered[from]) / n : null;
  });
}

// Every target's coverage over the last samples at each of the curve's
// points, against the model's level (dotted).
function coverageChart(model) {
  const width = 520, height = 200;
  const left = 52, right = 24, top = 22, bottom = 34;
  const curve = model.curve;
  const level = model.interval.level;
  const svg = svgElement('svg', {viewBox: `0 0 ${width} ${height}`,
                                 class: 'coverage', role: 'img',
                                 'aria-label': `interval coverage of ${model.name}`});
  if (curve.samples.length === 0) {
    svg.append(svgElement('text', {x: width / 2, y: height / 2,
                                   'text-anchor': 'middle'},
                          'no samples learned yet'));
    return svg;
  }
  const x = samplesAxis(svg, curve.samples, {width, height, left, right, bottom});
  const y = (v) => top + (height - top - bottom) * (1 - v);
  for (const tick of [0, 0.5, 1]) {
    svg.append(svgElement('line', {class: 'axis', x1: left, x2: width - right,
                                   y1: y(tick), y2: y(tick)}),
               svgElement('text', {x: left - 6, y: y(tick) + 4,
                                   'text-anchor': 'end'}, percent(tick)));
  }
  svg.append(svgElement('line', {class: 'nominal', x1: left,
                                 x2: width - right, y1: y(level),
                                 y2: y(level), 'data-level': level}),
             svgElement('text', {x: 8, y: 14},
                        `coverage of the last ${COVERAGE_WINDOW_SAMPLES}+ ` +
                        `samples (nominal ${percent(level)})`));
  model.targets.forEach((target, t) => {
    const coverage = trailingCoverage(curve.samples,
                                      curve.interval_coverage[t]);
    svg.append(svgElement('path', {
      class: 'curve coverage', d: linePath(curve.samples, coverage, x, y),
      stroke: COLORS[t % COLORS.length], 'data-target': target}));
  });
  return svg;
}

// Target t's last predictions: the interval as a band, the predicted
// value as a line, and the truth as dots (red when outside the band).
function bandChart(model, t) {
  const width = 520, height = 180;
  const left = 52, right = 24, top = 22, bottom = 34;
  const recent = model.recent;
  const target = model.targets[t];
  const svg = svgElement('svg', {viewBox: `0 0 ${width} ${height}`,
                                 class: 'band-chart', role: 'img',
                                 'data-target': target,
                                 'aria-label': `recent intervals of ${target}`});
  const samples = recent.samples;
  const shown = [...recent.truth[t], ...recent.value[t], ...recent.lower[t],
                 ...recent.upper[t]].filter((v) => v !== null);
  if (samples.length === 0 || shown.length === 0) {
    svg.append(svgElement('text', {x: width / 2, y: height / 2,
                                   'text-anchor': 'middle'},
                          'no predictions yet'));
    return svg;
  }
  let low = Math.min(...shown), high = Math.max(...shown);
  if (high === low) high = low + 1;
  const first = samples[0], last = Math.max(samples[0] + 1, samples.at(-1));
  const x = (s) => left + (width - left - right) * (s - first) / (last - first);
  const y = (v) => top + (height - top - bottom) * (high - v) / (high - low);
  for (const tick of [low, (low + high) / 2, high]) {
    svg.append(svgElement('line', {class: 'axis', x1: left, x2: width - right,
                                   y1: y(tick), y2: y(tick)}),
               svgElement('text', {x: left - 6, y: y(tick) + 4,
                                   'text-anchor': 'end'}, formatNumber(tick)));
  }
  for (const tick of [first, last]) {
    svg.append(svgElement('text', {x: x(tick), y: height - bottom + 16,
                                   'text-anchor': 'middle'}, formatCount(tick)));
  }
  // The band where the interval is finite (null: infinite, none yet).
  const upper = [], lower = [];
  samples.forEach((s, i) => {
    if (recent.lower[t][i] === null || recent.upper[t][i] === null) return;
    upper.push(`${x(s).toFixed(1)},${y(recent.upper[t][i]).toFixed(1)}`);
    lower.unshift(`${x(s).toFixed(1)},${y(recent.lower[t][i]).toFixed(1)}`);
  });
  if (upper.length > 0) {
    svg.append(svgElement('polygon', {class: 'band', 'data-target': target,
                                      points: [...upper, ...lower].join(' ')}));
  }
  svg.append(svgElement('path', {class: 'predicted', 'data-target': target,
                                 d: linePath(samples, recent.value[t], x, y)}));
  let within = 0;
  samples.forEach((s, i) => {
    const truth = recent.truth[t][i];
    const lo = recent.lower[t][i] ?? -Infinity;
    const hi = recent.upper[t][i] ?? Infinity;
    const inside = truth >= lo && truth <= hi;
    if (inside) within += 1;
    svg.append(svgElement('circle', {class: inside ? 'truth' : 'truth outside',
                                     cx: x(s).toFixed(1), cy: y(truth).toFixed(1),
                                     r: 1.6}));
  });
  svg.append(svgElement('text', {x: 8, y: 14, class: 'band-caption'},
                        `${target}: ${within} of ${samples.length} within ` +
                        `the ${percent(model.interval.level)} interval`));
  return svg;
}

// A target's half width and coverage, of the queries' intervals or (with
// `answers`) of the Learn answers'.
function intervalText(model, t, answers = false) {
  const interval = model.interval;
  const half = answers ? interval.answer_half_width[t] : interval.half_width[t];
  const covered = answers ? interval.answer_coverage[t] : interval.coverage[t];
  return `${half === null ? '∞' : '±' + formatNumber(half)} · ` +
         `${percent(covered)} within`;
}

function curveLegend(model, note = 'solid: prequential · dashed: honest') {
  const legend = element('div', {class: 'legend'});
  model.targets.forEach((target, t) => {
    const item = element('span', {}, null);
    const swatch = element('i');
    swatch.style.background = COLORS[t % COLORS.length];
    item.append(swatch, document.createTextNode(target));
    legend.append(item);
  });
  legend.append(element('span', {}, note));
  return legend;
}

// ---- learned metrics ----

// Horizontal bars, one per label, scaled to the largest magnitude.
function barChart(labels, values, className, caption) {
  const rowHeight = 18, right = 64, width = 520;
  const longest = Math.max(...labels.map((label) => label.length));
  const left = Math.min(220, 16 + 6.5 * longest);
  const height = rowHeight * labels.length + 8;
  const svg = svgElement('svg', {viewBox: `0 0 ${width} ${height}`,
                                 class: className, role: 'img',
                                 'aria-label': caption});
  const largest = Math.max(1e-300, ...values.map((v) => Math.abs(v ?? 0)));
  const span = width - left - right;
  labels.forEach((label, i) => {
    const value = values[i] ?? 0;
    const length = span * Math.abs(value) / largest;
    const yTop = 4 + i * rowHeight;
    svg.append(
        svgElement('text', {x: left - 6, y: yTop + 12, 'text-anchor': 'end'},
                   label),
        svgElement('rect', {class: value < 0 ? 'bar negative' : 'bar',
                            x: left, y: yTop + 2, width: length.toFixed(1),
                            height: rowHeight - 5, 'data-input': label,
                            'data-value': value}),
        svgElement('text', {x: left + length + 4, y: yTop + 12},
                   formatNumber(value)));
  });
  return svg;
}

function metricFigures(model, metric) {
  const figures = [];
  const heading = metric.scope === 'all targets' ?
      `${metric.kind}` : `${metric.kind} — ${metric.scope}`;
  const block = element('div', {class: 'metric',
                                'data-scope': metric.scope,
                                'data-kind': metric.kind});
  block.append(element('h3', {}, `Input weights: ${heading}`),
               barChart(model.inputs, metric.weights, 'weights',
                        `input weights of ${model.name}`));
  figures.push(block);
  if (metric.eigenvalues) {
    const spectrum = element('div', {class: 'metric-spectrum'});
    spectrum.append(
        element('h3', {}, `Spectrum: ${heading}`),
        barChart(metric.eigenvalues.map((_, r) => `λ${r + 1}`),
                 metric.eigenvalues, 'spectrum',
                 `eigenvalues of the metric of ${model.name}`));
    figures.push(spectrum);
    metric.directions.forEach((direction, r) => {
      const figure = element('div', {class: 'metric-direction'});
      figure.append(
          element('h3', {}, `Direction ${r + 1} (λ${r + 1}): ${heading}`),
          barChart(model.inputs, direction, 'direction',
                   `eigenvector ${r + 1} of ${model.name}`));
      figures.push(figure);
    });
  }
  return figures;
}

// ---- a model's card ----

function fact(figure, value, label = null) {
  const item = element('div');
  item.append(labelled('dt', figure, {}, label),
              element('dd', {'data-figure': figure}, value));
  return item;
}

// Target t's candidates and their weights in queries (or, with `answers`,
// in Learn answers): "knn+base 61 %, ...".
function candidatesText(model, t, answers = false) {
  const {names} = model.candidates;
  const weights = answers ? model.candidates.answer_weights :
                            model.candidates.weights;
  return names.map((name, c) => `${name} ${percent(weights[t][c])}`)
      .join(', ');
}

// The per-target figures as a table, a row per target: each number sits
// in its target's row and its figure's column.
function targetColumns(model) {
  const level = percent(model.interval.level);
  const answered = model.answers.sent > 0;
  const columns = [
    ['regressor', null, (t) => model.regressors[t] ?? '—'],
    ['answers', null, (t) => answered ?
        `${formatNumber(model.answers.nmse[t])} · recent ` +
            formatNumber(model.answers.recent_nmse[t]) :
        'no answers yet'],
    ['prequential', null, (t) => formatNumber(model.prequential_nmse[t])],
    ['honest', null, (t) => formatNumber(model.honest_nmse[t])],
    ['interval', `${level} interval`, (t) => intervalText(model, t)],
    ['answerInterval', `${level} answers' interval`,
     (t) => intervalText(model, t, true)],
  ];
  if (model.ahead.scored > 0) {
    columns.push(['ahead', `predictions ahead (${
                     formatCount(model.ahead.scored)})`,
                  (t) => `${formatNumber(model.ahead.nmse[t])} · ` +
                      `${percent(model.ahead.coverage[t])} within`]);
  }
  if (model.candidates !== undefined) {
    columns.push(['candidates', null, (t) => candidatesText(model, t)],
                 ['answerCandidates', null,
                  (t) => candidatesText(model, t, true)]);
  }
  return columns;
}

function targetTable(model) {
  const table = element('table', {class: 'targets',
                                  'data-model': model.name});
  const columns = targetColumns(model);
  const head = element('tr');
  head.append(element('th', {}, 'target'));
  for (const [figure, label] of columns) {
    head.append(labelled('th', figure, {class: 'num'}, label));
  }
  table.append(element('thead'), element('tbody'));
  table.tHead.append(head);
  model.targets.forEach((target, t) => {
    const row = element('tr', {'data-target': target});
    row.append(element('th', {scope: 'row'}, target));
    for (const [figure, , text] of columns) {
      row.append(element('td', {class: 'num', 'data-figure': figure,
                                'data-target': target}, text(t)));
    }
    table.tBodies[0].append(row);
  });
  return table;
}

function modelCard(model) {
  const card = element('section', {class: 'model', 'data-model': model.name});
  const heading = element('h2', {}, model.name);
  if (streaming(model)) {
    heading.append(element('span', {class: 'badge'}, 'streaming'));
  }
  card.append(heading);
  const facts = element('dl', {class: 'facts'});
  facts.append(
      fact('metric', model.metric),
      fact('arriving', arrivingText(model)),
      fact('samples', formatCount(model.samples_seen)),
      fact('capacity', capacityText(model)),
      fact('lag', lagText(model)),
      fact('pauses', pausesText(model)),
      fact('snapshot', model.snapshot ?
           `${formatSeconds(model.snapshot.age_seconds)} (` +
           `${formatCount(model.snapshot.samples_since)} samples since)` :
           'no snapshots (cluster mode)'),
      fact('memory', formatBytes(model.memory_bytes)),
      fact('answersSent', formatCount(model.answers.sent)));
  card.append(facts, element('h3', {}, 'Per target'), targetTable(model));
  if (model.curve === undefined) return card;
  const charts = element('div', {class: 'charts'});
  const curves = element('div');
  curves.append(element('h3', {}, 'Learning curves'), curveChart(model),
                curveLegend(model));
  charts.append(curves);
  const coverage = element('div');
  coverage.append(element('h3', {}, 'Interval coverage over time'),
                  coverageChart(model), curveLegend(model, 'one line per target'));
  charts.append(coverage);
  model.targets.forEach((target, t) => {
    const band = element('div');
    band.append(element('h3', {}, `Recent predictions: ${target}`),
                bandChart(model, t));
    charts.append(band);
  });
  for (const metric of model.learned_metrics) {
    charts.append(...metricFigures(model, metric));
  }
  card.append(charts);
  return card;
}

function renderModels(models) {
  const main = document.getElementById('models');
  main.replaceChildren(
      ...models.filter((m) => detailsShown(m.name)).map(modelCard));
}

// ---- polling ----

let pending = null;

function statusAddress() {
  if (modelCount <= AUTO_SHOWN_MODELS) return '/api/status';
  return '/api/status?detail=' +
      encodeURIComponent([...shown].join(','));
}

async function readStatus() {
  const response = await fetch(statusAddress(), {cache: 'no-store'});
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  const report = await response.json();
  const count = report.models.length;
  const refetch = (count > AUTO_SHOWN_MODELS) !==
                  (modelCount > AUTO_SHOWN_MODELS);
  modelCount = count;
  if (refetch) return readStatus();  // the details asked for change
  return report;
}

function render(report) {
  noteArrivals(report.models);
  const models = inShowingOrder(report.models);
  const server = report.server;
  const failed = server.failed_models.length;
  document.getElementById('server').textContent =
      `server ${server.version}, up ${formatSeconds(server.uptime_seconds)}, ` +
      `${report.models.length} models` +
      (failed ? `, ${failed} failed` : '');
  document.getElementById('updated').textContent =
      `updated ${new Date().toLocaleTimeString()}`;
  const problems = [
    ...server.failed_models.map((m) => `${m.name} was not recovered: ${m.error}`),
    ...report.models.filter((m) => m.failed)
        .map((m) => `${m.name} refuses writes: ${m.failed}`),
  ];
  showProblem(problems.length ? problems.join(' · ') : null);
  renderOverview(models);
  renderCluster(report.cluster);
  renderLatency(report.latency);
  renderModels(models);
}

let polling = false;  // a reading is under way
let pollAgain = false;  // and another was asked for meanwhile

async function poll() {
  if (polling) {
    pollAgain = true;
    return;
  }
  polling = true;
  clearTimeout(pending);
  try {
    render(await readStatus());
  } catch (error) {
    showProblem(`Cannot read the server's status: ${error.message}`);
  }
  polling = false;
  if (pollAgain) {
    pollAgain = false;
    poll();
  } else {
    pending = setTimeout(poll, POLL_MILLISECONDS);
  }
}

// The report the page came with (the server writes it into the page), so
// that the first view needs no second request; null if it has none.
function firstReport() {
  const text = document.getElementById('first-report')?.textContent.trim();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function start() {
  renderGlossary();
  const report = firstReport();
  if (report === null) {
    poll();
    return;
  }
  modelCount = report.models.length;
  render(report);
  // Past AUTO_SHOWN_MODELS the report details none: ask for those chosen.
  if (modelCount > AUTO_SHOWN_MODELS && shown.size > 0) {
    poll();
  } else {
    pending = setTimeout(poll, POLL_MILLISECONDS);
  }
}

start();
