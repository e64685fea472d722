// The extension's unit tests (src/__tests__/*.spec.ts), run by `npm test` and `./dev.sh test`.
// TypeScript through ts-jest (type-checked, tsconfig.test.json); @jupyter/ydoc ships ES modules
// only, so it is compiled too — the journal is tested against a real shared notebook.
module.exports = {
  preset: 'ts-jest/presets/js-with-ts',
  testEnvironment: 'node',
  roots: ['<rootDir>/src'],
  testMatch: ['**/__tests__/**/*.spec.ts'],
  transform: {
    '^.+\\.[tj]s$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }]
  },
  transformIgnorePatterns: ['/node_modules/(?!@jupyter/ydoc/)']
};
