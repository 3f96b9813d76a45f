/**
 * What a rollback replaced: the directory's tree (not read again until it changes) and the model
 * (not applied again from the directory: a replica that gets a rollback before the push it
 * reverts skips that push). Kept in the replica state, so a restart does not undo a rollback.
 */
import type { Stores } from '../store/database.ts';

export class RollbackSuppression {
  tree?: string;
  model?: string;

  constructor(private readonly stores: Pick<Stores, 'replicaState' | 'atomically'>) {}

  /** Reads what the replica state kept (a restart). */
  restore(): void {
    this.tree = this.stores.replicaState.get('rollback.suppressedTree');
    this.model = this.stores.replicaState.get('rollback.suppressedModel');
  }

  /** Records what a rollback replaced (undefined clears), here and in the replica state. */
  set(tree: string | undefined, model: string | undefined): void {
    this.tree = tree;
    this.model = model;
    this.stores.atomically(() => {
      this.stores.replicaState.set('rollback.suppressedTree', tree);
      this.stores.replicaState.set('rollback.suppressedModel', model);
    });
  }
}
