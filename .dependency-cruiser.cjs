/**
 * The layering of ../shared/docs/style.md as rules: `npm run lint` fails on a new import
 * across layers or modules. Fix the design rather than adding an exception here.
 */
const MODULE = '^src/modules/([^/]+)/';

module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'Files (and so modules) import each other in one direction only.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'domain-is-plain',
      severity: 'error',
      comment: 'domain/ holds plain rules: no framework, ORM, HTTP library, database, queue or other layer.',
      from: { path: `${MODULE}domain/` },
      to: {
        path: [
          '^src/modules/[^/]+/(api|application|infrastructure)/',
          '^src/(database|queue|config)/',
          '^(node_modules/)?(@nestjs|typeorm|pg|pg-boss|class-validator|class-transformer|express|@?nestjs-cls)(/|$)',
        ],
      },
    },
    {
      name: 'application-through-ports',
      severity: 'error',
      comment: 'application/ reaches infrastructure only through ports (abstract classes in domain/).',
      from: { path: `${MODULE}application/` },
      to: {
        path: ['^src/modules/[^/]+/(infrastructure|api)/', '^src/database/', '^(node_modules/)?(typeorm|pg)(/|$)'],
      },
    },
    {
      name: 'modules-keep-their-adapters',
      severity: 'error',
      comment: "No module imports another module's infrastructure/ or api/.",
      from: { path: MODULE },
      to: { path: '^src/modules/([^/]+)/(infrastructure|api)/', pathNot: '^src/modules/$1/' },
    },
    {
      name: 'modules-meet-at-published-parts',
      severity: 'error',
      comment:
        'A module reaches another through its domain/ (types, ports), application/ (use cases) and the files at its ' +
        'root (<name>.module.ts, <noun>.response.ts: the representation other APIs embed); its other folders ' +
        '(catalog/, ...; api/ and infrastructure/ have the rule above) are its own.',
      from: { path: MODULE },
      to: {
        path: '^src/modules/([^/]+)/[^/]+/',
        pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/(domain|application|api|infrastructure)/'],
      },
    },
    {
      name: 'core-imports-no-module',
      severity: 'error',
      comment: 'shared/, database/, queue/ and config/ sit under the modules; modules import them, never the reverse.',
      from: { path: '^src/(shared|database|queue|config)/' },
      to: { path: '^src/modules/' },
    },
    {
      name: 'no-test-support-in-src',
      severity: 'error',
      comment: 'Test helpers live in test/support, not in what ships (specs and their *.fake.ts, left out of the build, may use them).',
      from: { path: '^src/', pathNot: '\\.(spec|fake)\\.ts$' },
      to: { path: '(^test/|/test-support/)' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^dist/|\\.(spec|fake)\\.ts$|src/database/migrations/)' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
