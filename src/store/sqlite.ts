import type Database from 'better-sqlite3';

/** The database handle each store is given by `openStores`; it never leaves `src/store/`. */
export type Sqlite = Database.Database;
export type Statement = Database.Statement;
