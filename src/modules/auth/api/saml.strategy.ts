import { Injectable, OnModuleInit } from '@nestjs/common';
import { MultiSamlStrategy, Profile, VerifiedCallback } from '@node-saml/passport-saml';
import type { Request } from 'express';
import passport from 'passport';
import { RequestIdCache } from '../application/request-id-cache';
import { SamlSignInService } from '../application/saml-sign-in.service';

export const SAML_STRATEGY = 'saml';

/** What the ACS route's request carries between the strategy's steps. */
export interface SamlRequest extends Request {
  samlCache?: RequestIdCache;
}

/**
 * passport-saml's MultiSamlStrategy, one per process: each request gets its organization's
 * options (from the `:org` slug, with the SP key that decrypts its assertion) and a request-id
 * cache of its own. Validation is node-saml's; the verify step provisions the user.
 */
@Injectable()
export class SamlStrategy implements OnModuleInit {
  constructor(private readonly saml: SamlSignInService) {}

  onModuleInit(): void {
    // passport-saml is typed against express 4's Request; the objects are express 5's.
    const strategy = new MultiSamlStrategy(
      {
        passReqToCallback: true,
        getSamlOptions: (req, done) => {
          const body = (req as unknown as Request).body as { SAMLResponse?: unknown } | undefined;
          const samlResponse = typeof body?.SAMLResponse === 'string' ? body.SAMLResponse : undefined;
          this.saml.options(slugOf(req as unknown as Request), samlResponse).then(
            ({ options, cache }) => {
              (req as unknown as SamlRequest).samlCache = cache;
              done(null, options);
            },
            (error: Error) => done(error),
          );
        },
      },
      (req, profile: Profile | null, done: VerifiedCallback) => {
        const request = req as unknown as SamlRequest;
        this.saml.signIn(slugOf(request), profile, request.samlCache!).then(
          (signedIn) => done(null, signedIn as unknown as Record<string, unknown>),
          (error: Error) => done(error),
        );
      },
      // Single logout has its own route (SamlLogoutService), not passport's.
      (_req, _profile: Profile | null, done: VerifiedCallback) => done(new Error('Single logout is served by the SLO route')),
    );
    passport.use(SAML_STRATEGY, strategy as unknown as passport.Strategy);
  }
}

function slugOf(req: Request): string {
  return String(req.params.org ?? '');
}
