import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { prepareForProperties, PROPERTY_ADDITIONS_COPY_LAYOUT, turnIntoDictionaries } from '../../lib/util/request-shape';

interface Shapes {
  request: boolean;
  response: boolean;
}

interface ProbeReport {
  plainObjectIsFast: boolean;
  expressMajor: number;
  shapes: Record<
    'bare' | 'preparingMiddleware' | 'ssoSession' | 'requireBearer' | 'qrLoginProvider' | 'qrLoginProviderElsewhere',
    Shapes[]
  >;
}

const expectedExpressMajor = Number(process.env.SSO_KIT_EXPECTED_EXPRESS_MAJOR ?? '5');

/**
 * V8's own answer to "are this object's properties still a shared layout?" comes from a runtime function that only
 * code compiled under --allow-natives-syntax may call. Turning that flag on inside a test worker would change the
 * engine under every suite the worker runs next, so request-shape.probe.ts asks in a child process of its own, on the
 * Express major this run tests.
 */
async function probe(): Promise<ProbeReport> {
  const preload = expectedExpressMajor === 4 ? ['--require', resolve(__dirname, '../helpers/resolve-express4.js')] : [];
  const args = ['--allow-natives-syntax', ...preload, '--import', 'tsx', resolve(__dirname, 'request-shape.probe.ts')];
  const { stdout } = await promisify(execFile)(process.execPath, args, { cwd: resolve(__dirname, '../..'), timeout: 60_000 });
  return JSON.parse(stdout) as ProbeReport;
}

const nodeMajor = Number(process.versions.node.split('.')[0]);
/** Whether the kit's middlewares leave the objects as dictionaries: only on Node 22, where that pays. */
const prepared = nodeMajor < 24;

describe('prepareForProperties', () => {
  it('takes the step on Node 22 only: from Node 24 on, adding properties is cheap without it', () => {
    expect(PROPERTY_ADDITIONS_COPY_LAYOUT).toBe(prepared);
  });

  it('keeps req.res and res.req, their values and attributes, and the other properties', () => {
    const res: Record<string, unknown> = { statusCode: 200 };
    const req: Record<string, unknown> = { url: '/', res };
    res.req = req;
    const before = { req: Object.getOwnPropertyDescriptors(req), res: Object.getOwnPropertyDescriptors(res) };
    turnIntoDictionaries(req, res);
    prepareForProperties(req, res);
    expect(Object.getOwnPropertyDescriptors(req)).toEqual(before.req);
    expect(Object.getOwnPropertyDescriptors(res)).toEqual(before.res);
    expect(req.res).toBe(res);
    expect(res.req).toBe(req);
  });

  it('leaves alone objects without those properties, or with them read-only or inherited', () => {
    const bare = {};
    const readOnly = Object.defineProperty({}, 'res', { value: 1, enumerable: true, configurable: true, writable: false });
    const inherited = Object.create({ req: 1 }) as object;
    turnIntoDictionaries(bare, inherited);
    turnIntoDictionaries(readOnly, {});
    expect(Object.getOwnPropertyNames(bare)).toEqual([]);
    expect(Object.getOwnPropertyNames(inherited)).toEqual([]);
    expect(Object.getOwnPropertyDescriptor(readOnly, 'res')).toEqual({ value: 1, enumerable: true, configurable: true, writable: false });
  });
});

describe('V8 on requests through Express and the kit', () => {
  let report: ProbeReport;
  beforeAll(async () => {
    report = await probe();
  }, 60_000);

  it('runs on the Express major under test, and V8 answers for a plain object', () => {
    expect(report.expressMajor).toBe(expectedExpressMajor);
    expect(report.plainObjectIsFast).toBe(true);
  });

  // On Node 22 the objects must end up as dictionaries; from Node 24 on they must be left with their fast layout.
  const shape = { request: !prepared, response: !prepared };

  it('bare Express leaves the request and response shared; preparingMiddleware turns both into dictionaries on Node 22 only', () => {
    expect(report.shapes.bare).toEqual([{ request: true, response: true }]);
    expect(report.shapes.preparingMiddleware).toEqual([shape]);
  });

  it('ssoSession prepares the request before adding its properties on Node 22, and leaves it fast from Node 24 on', () => {
    expect(report.shapes.ssoSession).toEqual([shape]);
  });

  it('requireBearer does the same, also when it refuses', () => {
    expect(report.shapes.requireBearer).toEqual([shape]);
  });

  it('qrLoginProvider does the same on its paths, and leaves the other requests of the app as they came', () => {
    expect(report.shapes.qrLoginProvider).toEqual([shape]);
    expect(report.shapes.qrLoginProviderElsewhere).toEqual([{ request: true, response: true }]);
  });
});
