/** One panel of {@link curvesSvg}: a line through a few measured points. */
export interface PlotPanel {
  title: string;
  xLabel: string;
  yLabel: string;
  points: Array<{ x: number; y: number }>;
  /** Plot x on a log scale (sizes that grow by powers of ten). */
  logX?: boolean;
}

const WIDTH = 300;
const HEIGHT = 210;
const MARGIN = { left: 56, right: 16, top: 30, bottom: 40 };

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function compact(value: number): string {
  if (value >= 1_000_000) return `${+(value / 1_000_000).toFixed(1)}M`;
  if (value >= 10_000) return `${Math.round(value / 1000)}k`;
  if (value >= 100) return String(Math.round(value));
  return String(+value.toFixed(2));
}

function panel(spec: PlotPanel, offsetX: number, offsetY: number): string {
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom;
  const xs = spec.points.map((point) => (spec.logX ? Math.log10(Math.max(point.x, 1e-9)) : point.x));
  const minX = Math.min(...xs);
  const maxX = Math.max(...xs);
  const maxY = Math.max(...spec.points.map((point) => point.y), 1e-9) * 1.15;
  const px = (x: number) => MARGIN.left + (maxX === minX ? plotWidth / 2 : ((x - minX) / (maxX - minX)) * plotWidth);
  const py = (y: number) => MARGIN.top + plotHeight - (y / maxY) * plotHeight;
  const coordinates = spec.points.map((point, index) => [px(xs[index]!), py(point.y)] as const);
  const parts = [
    `<g transform="translate(${offsetX},${offsetY})">`,
    `<rect x="0.5" y="0.5" width="${WIDTH - 1}" height="${HEIGHT - 1}" fill="#fff" stroke="#ddd"/>`,
    `<text x="${WIDTH / 2}" y="18" text-anchor="middle" font-weight="bold">${escape(spec.title)}</text>`,
    `<line x1="${MARGIN.left}" y1="${MARGIN.top + plotHeight}" x2="${MARGIN.left + plotWidth}" y2="${MARGIN.top + plotHeight}" stroke="#888"/>`,
    `<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${MARGIN.top + plotHeight}" stroke="#888"/>`,
    `<text x="${MARGIN.left - 6}" y="${MARGIN.top + 4}" text-anchor="end">${compact(maxY)}</text>`,
    `<text x="${MARGIN.left - 6}" y="${MARGIN.top + plotHeight}" text-anchor="end">0</text>`,
    `<text x="${MARGIN.left + plotWidth / 2}" y="${HEIGHT - 6}" text-anchor="middle">${escape(spec.xLabel)}</text>`,
    `<text transform="translate(14,${MARGIN.top + plotHeight / 2}) rotate(-90)" text-anchor="middle">${escape(spec.yLabel)}</text>`,
    `<polyline fill="none" stroke="#2563eb" stroke-width="2" points="${coordinates.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ')}"/>`,
  ];
  spec.points.forEach((point, index) => {
    const [x, y] = coordinates[index]!;
    parts.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="3" fill="#2563eb"/>`);
    parts.push(`<text x="${x.toFixed(1)}" y="${(y - 7).toFixed(1)}" text-anchor="middle">${compact(point.y)}</text>`);
    parts.push(`<text x="${x.toFixed(1)}" y="${MARGIN.top + plotHeight + 14}" text-anchor="middle">${compact(point.x)}</text>`);
  });
  parts.push('</g>');
  return parts.join('');
}

/**
 * A small SVG with one line chart per panel, three to a row, for bench/RESULTS.md.
 *
 * @example
 * await writeFile('bench/curves.svg', curvesSvg([{ title: 'Session check', xLabel: 'sessions', yLabel: 'req/s', points, logX: true }]));
 */
export function curvesSvg(panels: PlotPanel[]): string {
  const columns = Math.min(3, panels.length);
  const rows = Math.ceil(panels.length / columns);
  const width = columns * WIDTH + (columns - 1) * 10;
  const height = rows * HEIGHT + (rows - 1) * 10;
  const body = panels.map((spec, index) => panel(spec, (index % columns) * (WIDTH + 10), Math.floor(index / columns) * (HEIGHT + 10)));
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}
