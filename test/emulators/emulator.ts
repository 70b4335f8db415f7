/** The emulator lives in src/emulators so `interlock demo` can start it too; tests import it from here. */
export * from '../../src/emulators/emulator.js'
