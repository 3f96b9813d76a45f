import type { Logger } from 'pino';
import {
  completesHandshake,
  readListenerTls,
  type ListenerTls,
  type ListenerTlsInfo,
  type TlsFileSettings,
} from '../security/listener-tls.ts';

export type CertificateReload = 'unchanged' | 'served' | 'refused';

/**
 * Keeps one of fleetxds's own TLS listeners (gRPC or REST) on the certificate its files hold now.
 * Read at start (an unusable set fails the start, naming the file); read again when a file changes
 * (the watcher) or on SIGHUP. A new set is served to new connections only if it can serve: it
 * parses within its size and chain bounds, the key is the certificate's, the certificate has not
 * expired, and a TLS handshake with it completes. Otherwise the one
 * served stays and the reason is logged, so a renewal caught half-written (certificate replaced,
 * key not yet) or a wrong file never breaks the listener; the write that completes it is a change
 * of its own and is read then.
 */
export class ListenerCertificate {
  private current: ListenerTlsInfo;
  /** What the listener is started with. */
  readonly initial: ListenerTls;

  constructor(
    readonly listener: 'grpc' | 'rest',
    private readonly files: TlsFileSettings,
    private readonly log: Logger,
    private readonly now: () => Date = () => new Date(),
  ) {
    const { tls, info } = readListenerTls(files);
    this.initial = tls;
    this.current = info;
    if (info.notAfter <= now())
      log.warn({ listener, notAfter: info.notAfter, file: files.certFile }, 'listener certificate has expired');
  }

  /** The files to watch. */
  get paths(): string[] {
    return [this.files.certFile, this.files.keyFile, ...(this.files.clientCaFile ? [this.files.clientCaFile] : [])];
  }

  get served(): ListenerTlsInfo {
    return this.current;
  }

  /**
   * Reads the files again; hands a new, usable set to `serve` (the listener's setTls) once a TLS
   * handshake with it has completed. Reloads run one at a time, in order.
   */
  reload(serve: (tls: ListenerTls) => void): Promise<CertificateReload> {
    const next = this.reloading.then(() => this.reloadNow(serve));
    this.reloading = next.catch(() => undefined);
    return next;
  }

  private reloading: Promise<unknown> = Promise.resolve();

  private async reloadNow(serve: (tls: ListenerTls) => void): Promise<CertificateReload> {
    const listener = this.listener;
    const refuse = (reason: string): CertificateReload => {
      this.log.warn(
        { listener, reason, fingerprint: this.current.fingerprint },
        'listener certificate not reloaded; new connections still get the one served',
      );
      return 'refused';
    };
    let next: ReturnType<typeof readListenerTls>;
    try {
      next = readListenerTls(this.files);
    } catch (err) {
      return refuse((err as Error).message);
    }
    if (next.info.digest === this.current.digest) return 'unchanged';
    if (next.info.notAfter <= this.now())
      return refuse(`${this.files.certFile}: the certificate expired at ${next.info.notAfter.toISOString()}`);
    try {
      await completesHandshake(next.tls);
    } catch (err) {
      return refuse(`${this.files.certFile}: a TLS handshake with it fails (${(err as Error).message})`);
    }
    try {
      serve(next.tls);
    } catch (err) {
      return refuse((err as Error).message);
    }
    this.current = next.info;
    const { fingerprint, notAfter, subject } = next.info;
    this.log.info(
      { listener, fingerprint, notAfter, subject },
      'listener certificate reloaded; new connections get it',
    );
    return 'served';
  }
}
